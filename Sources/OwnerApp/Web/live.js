// The page's live values by server-sent events (GET /api/v1/live, LiveHub): one stream while logged in, read with
// `fetch` (an EventSource cannot send the bearer token, and a token in the URL would reach logs). The outlet list
// and the detail's power, state and online follow the stream and stop polling; the detail's figures and cost are
// read when it opens and once a minute. Without a stream (refused, cut, an older server) the page polls every 3 s
// as before and tries the stream again after 30 s (5 s after an `end` event, so an ended session reaches the login
// screen at once). `document.body.dataset.live` says which: `stream` or `polling`. Included in app.js's closure.
function startLive() {
  if (!state.token || state.live.controller || !window.ReadableStream || !window.TextDecoder) return;
  if (state.live.retry) { clearTimeout(state.live.retry); state.live.retry = null; }
  var controller = new AbortController();
  state.live.controller = controller;
  fetch("/api/v1/live", { headers: { Authorization: "Bearer " + state.token, Accept: "text/event-stream" },
                          signal: controller.signal })
    .then(function (response) {
      if (response.status === 401) { stopLive(); endSession(t.sessionEnded); return; }
      if (!response.ok || !response.body) throw new Error("no stream: HTTP " + response.status);
      var reader = response.body.getReader(), decoder = new TextDecoder(), buffer = "";
      function pump() {
        return reader.read().then(function (part) {
          if (part.done) throw new Error("the stream ended");
          buffer += decoder.decode(part.value, { stream: true });
          var end;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            liveEvent(buffer.slice(0, end));
            buffer = buffer.slice(end + 2);
          }
          return pump();
        });
      }
      return pump();
    })
    .catch(function () {
      if (state.live.controller !== controller) return;  // stopped on purpose
      state.live.controller = null;
      setLive(false);
      if (state.token) state.live.retry = setTimeout(startLive, state.live.delay);
      state.live.delay = 30000;
    });
}

function stopLive() {
  var controller = state.live.controller;
  state.live.controller = null;
  if (state.live.retry) { clearTimeout(state.live.retry); state.live.retry = null; }
  state.live.outlets = null;
  if (controller) controller.abort();
  setLive(false);
}

function setLive(connected) {
  document.body.dataset.live = connected ? "stream" : "polling";
  if (state.live.connected === connected) return;
  state.live.connected = connected;
  schedule();
}

// One event: "outlets" carries the owner's outlets (as GET /api/v1/outlets lists them), "alerts" the number of
// open alert incidents (alerts.js); "end" comes last.
function liveEvent(block) {
  var name = "message", data = "";
  block.split("\n").forEach(function (line) {
    if (line.indexOf("event: ") === 0) name = line.slice(7);
    if (line.indexOf("data: ") === 0) data += line.slice(6);
  });
  if (name === "end") { state.live.delay = 5000; return; }
  if (name === "alerts") {
    showAlertCount(JSON.parse(data).open);
    if (state.screen === "outlets") loadAlerts();
    return;
  }
  if (name !== "outlets") return;
  var update = JSON.parse(data);
  state.live.outlets = update.outlets;
  setLive(true);
  if (state.screen === "outlets") renderOutlets(update.outlets);
  if (state.screen === "detail") {
    update.outlets.forEach(function (outlet) { if (outlet.code === state.code) showLiveValues(outlet); });
  }
}
