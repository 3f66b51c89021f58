// The page's script: screens, live values (live.js: a stream, else polling), commands, the SVG chart, English and
// pt-BR. live.js, automations.js and alerts.js are included inside this closure when the page is built
// (Plugins/EmbedWebPlugin), so they share its `$`, `api`, `t`, `language` and `state`.
"use strict";
(function () {
  var texts = {
    en: {
      title: "My outlets", logout: "Log out", login: "Log in", username: "User name", password: "Password",
      loginButton: "Log in", outlets: "Outlets", noOutlets: "No outlets yet. Add one with the code printed on it.",
      addOutlet: "Add outlet", code: "Code printed on the outlet", name: "Name", description: "Description",
      claimKey: "Claim key on the label (XXXX-XXXX-XXXX)",
      tooManyClaims: "Too many failed attempts. Check the code and key on the label and try again later.",
      costToday: "Cost today", costMonth: "This month so far", costProjected: "Projected this month",
      standby: "Standby", perMonth: " a month",
      save: "Save", cancel: "Cancel", codeShort: "Code", power: "Power now", average: "Average today",
      peak: "Peak today", energy: "Energy today", state: "State", turnOn: "Turn on", turnOff: "Turn off",
      chart: "Chart", edit: "Edit", back: "Back", release: "Remove from my outlets", chartTitle: "Power by hour", day: "Day",
      on: "on", off: "off", unknown: "unknown", online: "online", offline: "offline",
      wrongLogin: "Wrong user name or password.", tooMany: "Too many failed logins. Try again later.",
      unknownCode: "No outlet with this code and key is available.", failed: "Something went wrong: ",
      pending: "Sending… (pending)", confirmed: "Confirmed: the outlet is ", timezone: "Time zone: ",
      hoursWithData: " hours with data", noData: "no data", updated: "Updated ", sessionEnded: "Your session ended.",
      commandFailed: "Not done: ", releaseConfirm: "Remove this outlet from your list?",
      heldOffline: "the outlet is offline; it is sent when the outlet is back",
      statuses: { queued: "pending", sent: "sent, waiting for the outlet", confirmed: "confirmed",
                  timed_out: "timed out", rejected: "rejected", expired: "expired", superseded: "superseded" }
    },
    "pt-BR": {
      title: "Minhas tomadas", logout: "Sair", login: "Entrar", username: "Usuário", password: "Senha",
      loginButton: "Entrar", outlets: "Tomadas", noOutlets: "Nenhuma tomada ainda. Adicione uma pelo código impresso nela.",
      addOutlet: "Adicionar tomada", code: "Código impresso na tomada", name: "Nome", description: "Descrição",
      claimKey: "Chave impressa na etiqueta (XXXX-XXXX-XXXX)",
      tooManyClaims: "Muitas tentativas. Confira o código e a chave na etiqueta e tente mais tarde.",
      costToday: "Custo de hoje", costMonth: "Este mês até agora", costProjected: "Previsão do mês",
      standby: "Em espera", perMonth: " por mês",
      save: "Salvar", cancel: "Cancelar", codeShort: "Código", power: "Potência agora", average: "Média de hoje",
      peak: "Pico de hoje", energy: "Energia de hoje", state: "Estado", turnOn: "Ligar", turnOff: "Desligar",
      chart: "Gráfico", edit: "Editar", back: "Voltar", release: "Remover das minhas tomadas", chartTitle: "Potência por hora",
      day: "Dia", on: "ligada", off: "desligada", unknown: "desconhecido", online: "conectada",
      offline: "desconectada", wrongLogin: "Usuário ou senha incorretos.",
      tooMany: "Muitas tentativas. Tente novamente mais tarde.",
      unknownCode: "Nenhuma tomada com este código e chave está disponível.", failed: "Algo deu errado: ",
      pending: "Enviando… (pendente)", confirmed: "Confirmado: a tomada está ", timezone: "Fuso horário: ",
      hoursWithData: " horas com dados", noData: "sem dados", updated: "Atualizado ",
      sessionEnded: "Sua sessão terminou.", commandFailed: "Não realizado: ",
      releaseConfirm: "Remover esta tomada da sua lista?",
      heldOffline: "a tomada está desconectada; o comando será enviado quando ela voltar",
      statuses: { queued: "pendente", sent: "enviado, aguardando a tomada", confirmed: "confirmado",
                  timed_out: "sem resposta", rejected: "recusado", expired: "expirado", superseded: "substituído" }
    }
  };
  var languages = navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language || "en"];
  var language = /^pt\b/i.test(languages[0] || "") ? "pt-BR" : "en";
  var t = texts[language];
  var numberFormat = new Intl.NumberFormat(language, { maximumFractionDigits: 1, minimumFractionDigits: 1 });

  var state = { token: sessionStorage.getItem("outletd-token"), screen: null, code: null, outlet: null,
                timer: null, commandTimer: null,
                live: { controller: null, connected: false, outlets: null, retry: null, delay: 30000 } };

  function $(id) { return document.getElementById(id); }
  function watts(value) { return value === null || value === undefined ? "–" : numberFormat.format(value) + " W"; }
  function wattHours(value) { return value === null || value === undefined ? "–" : numberFormat.format(value) + " Wh"; }
  function stateText(value) { return value === "on" ? t.on : value === "off" ? t.off : t.unknown; }
  function onlineText(value) { return value === true ? t.online : value === false ? t.offline : t.unknown; }

  function translate() {
    document.documentElement.lang = language;
    var nodes = document.querySelectorAll("[data-t]");
    for (var i = 0; i < nodes.length; i++) {
      var key = nodes[i].getAttribute("data-t");
      if (t[key]) nodes[i].textContent = t[key];
    }
    document.title = t.title + " – outletd";
  }

  function api(method, path, body) {
    var options = { method: method, headers: {} };
    if (state.token) options.headers.Authorization = "Bearer " + state.token;
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
    }
    return fetch("/api/v1" + path, options).then(function (response) {
      if (response.status === 401 && path !== "/login") {
        endSession(t.sessionEnded);
        throw { status: 401, message: t.sessionEnded };
      }
      if (response.status === 204) return null;
      return response.json().catch(function () { return null; }).then(function (json) {
        if (!response.ok) {
          throw { status: response.status, message: json && json.error ? json.error.message : response.statusText };
        }
        return json;
      });
    });
  }

  function show(screen) {
    var names = ["login", "outlets", "add", "detail", "edit", "chart"];
    for (var i = 0; i < names.length; i++) $("screen-" + names[i]).hidden = names[i] !== screen;
    $("logout").hidden = screen === "login";
    state.screen = screen;
    if (screen !== "login") startLive();
    if (screen === "outlets") { loadOutlets(); openAlerts(); }
    if (screen === "detail") { openAutomations(); openAlertRules(); loadDetail(); }
    if (screen === "chart") loadChart();
    schedule();
  }

  // What the open screen polls: with the live stream, the list nothing and the detail its figures and cost
  // once a minute; without it, both every 3 s.
  function schedule() {
    if (state.timer) { clearInterval(state.timer); state.timer = null; }
    if (state.screen === "outlets" && !state.live.connected) state.timer = setInterval(loadOutlets, 3000);
    if (state.screen === "detail") state.timer = setInterval(loadDetail, state.live.connected ? 60000 : 3000);
  }

  function endSession(message) {
    stopLive();
    state.token = null;
    sessionStorage.removeItem("outletd-token");
    $("login-error").textContent = message || "";
    show("login");
  }

  function loadOutlets() {
    api("GET", "/outlets").then(renderOutlets).catch(function () {});
  }

  function renderOutlets(outlets) {
    var list = $("outlet-list");
    list.textContent = "";
    $("outlets-empty").hidden = outlets.length > 0;
    outlets.forEach(function (outlet) {
      var item = document.createElement("li");
      var button = document.createElement("button");
      button.type = "button";
      button.className = "outlet";
      button.setAttribute("data-code", outlet.code);
      var left = document.createElement("span");
      var name = document.createElement("strong");
      name.textContent = outlet.name;
      var meta = document.createElement("span");
      meta.className = "muted";
      meta.textContent = " " + outlet.code + " · " + onlineText(outlet.online) + " · " + stateText(outlet.state);
      left.appendChild(name);
      left.appendChild(meta);
      var power = document.createElement("span");
      power.className = "power";
      power.textContent = watts(outlet.power_watts);
      button.appendChild(left);
      button.appendChild(power);
      button.addEventListener("click", function () { state.code = outlet.code; show("detail"); });
      item.appendChild(button);
      list.appendChild(item);
    });
    $("outlets-updated").textContent = t.updated + new Date().toLocaleTimeString(language);
  }

  function loadDetail() {
    var code = state.code;
    api("GET", "/outlets/" + encodeURIComponent(code)).then(function (outlet) {
      if (code !== state.code) return;
      state.outlet = outlet;
      $("detail-name").textContent = outlet.name;
      $("detail-code").textContent = outlet.code;
      $("detail-description").textContent = outlet.description;
      showLiveValues(outlet);
      $("detail-average").textContent = watts(outlet.average_power_watts);
      $("detail-peak").textContent = watts(outlet.peak_power_watts);
      $("detail-energy").textContent = wattHours(outlet.energy_wh);
      $("detail-cost").textContent = money(outlet.cost, outlet.currency);
      $("detail-month").textContent = money(outlet.month_to_date_cost, outlet.currency);
      $("detail-projected").textContent = money(outlet.projected_month_cost, outlet.currency);
      $("detail-standby").textContent = outlet.standby_watts === null ? "–"
        : watts(outlet.standby_watts) + (outlet.standby_month_cost === null ? ""
          : " · " + money(outlet.standby_month_cost, outlet.currency) + t.perMonth);
      showAutomationGlance(outlet);
    }).catch(function (error) {
      if (error.status === 404) show("outlets");
    });
  }

  // What the live stream also carries: online, power and state.
  function showLiveValues(outlet) {
    $("detail-online").textContent = onlineText(outlet.online);
    $("detail-power").textContent = watts(outlet.power_watts);
    var stateNode = $("detail-state");
    stateNode.textContent = stateText(outlet.state);
    stateNode.className = outlet.state || "";
  }

  function switchTo(value) {
    var code = state.code;
    var status = $("switch-status");
    status.className = "pending";
    status.textContent = t.pending;
    $("switch-on").disabled = $("switch-off").disabled = true;
    api("PUT", "/outlets/" + encodeURIComponent(code) + "/state", { state: value }).then(function (command) {
      followCommand(command);
    }).catch(function (error) {
      status.className = "failed";
      status.textContent = t.failed + error.message;
      $("switch-on").disabled = $("switch-off").disabled = false;
    });
  }

  function followCommand(command) {
    var status = $("switch-status");
    var finished = ["confirmed", "timed_out", "rejected", "expired", "superseded"];
    if (state.commandTimer) { clearTimeout(state.commandTimer); state.commandTimer = null; }
    if (finished.indexOf(command.status) < 0) {
      status.className = "pending";
      var held = command.status === "queued" && state.outlet && state.outlet.online === false;
      status.textContent = t.pending + " – " + (held ? t.heldOffline : (t.statuses[command.status] || command.status));
      state.commandTimer = setTimeout(function () {
        api("GET", "/commands/" + command.command_id).then(followCommand).catch(function (error) {
          status.className = "failed";
          status.textContent = t.failed + error.message;
          $("switch-on").disabled = $("switch-off").disabled = false;
        });
      }, 400);
      return;
    }
    $("switch-on").disabled = $("switch-off").disabled = false;
    if (command.status === "confirmed") {
      status.className = "confirmed";
      status.setAttribute("data-status", "confirmed");
      status.textContent = t.statuses.confirmed + " ✓";
      loadDetail();
    } else {
      status.className = "failed";
      status.setAttribute("data-status", command.status);
      status.textContent = t.commandFailed + (t.statuses[command.status] || command.status)
        + (command.reason ? " (" + command.reason + ")" : "");
    }
  }

  function today() {
    var now = new Date();
    function two(n) { return (n < 10 ? "0" : "") + n; }
    return now.getFullYear() + "-" + two(now.getMonth() + 1) + "-" + two(now.getDate());
  }

  function loadChart() {
    var code = state.code;
    var date = $("chart-date").value;
    $("chart-name").textContent = state.outlet ? state.outlet.name : code;
    api("GET", "/outlets/" + encodeURIComponent(code) + "/hourly" + (date ? "?date=" + date : ""))
      .then(function (day) {
        if (!date) $("chart-date").value = day.date;
        $("chart-zone").textContent = t.timezone + day.timezone;
        drawChart(day);
      }).catch(function (error) {
        $("chart-summary").textContent = t.failed + error.message;
      });
  }

  // Money rounded once, here, to the currency's minor unit, in the page's language: R$ 1.234,56 in pt-BR.
  function money(value, currency) {
    if (value === null || value === undefined || !currency) return "–";
    return new Intl.NumberFormat(language, { style: "currency", currency: currency }).format(value);
  }

  function drawChart(day) {
    var ns = "http://www.w3.org/2000/svg";
    var currency = state.outlet ? state.outlet.currency : null;
    var axis = 44, width = 480, height = 200, top = 10, bottom = 20, slot = (width - axis) / day.hours.length;
    var max = 0;
    day.hours.forEach(function (hour) {
      if (hour.average_power_watts !== null && hour.average_power_watts > max) max = hour.average_power_watts;
    });
    var svg = document.createElementNS(ns, "svg");
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", t.chartTitle);
    // The value axis: 0, half and the highest hour, in watts.
    [0, 0.5, 1].forEach(function (fraction) {
      var y = height - bottom - (height - top - bottom) * fraction;
      var line = document.createElementNS(ns, "line");
      line.setAttribute("x1", String(axis - 4));
      line.setAttribute("x2", String(width));
      line.setAttribute("y1", y.toFixed(1));
      line.setAttribute("y2", y.toFixed(1));
      line.setAttribute("class", "grid");
      svg.appendChild(line);
      var value = document.createElementNS(ns, "text");
      value.setAttribute("x", String(axis - 6));
      value.setAttribute("y", (y + 3).toFixed(1));
      value.setAttribute("text-anchor", "end");
      value.setAttribute("class", "axis");
      value.textContent = max > 0 ? Math.round(max * fraction) + " W" : (fraction === 0 ? "0 W" : "");
      svg.appendChild(value);
    });
    var withData = 0;
    day.hours.forEach(function (hour, index) {
      var has = hour.average_power_watts !== null;
      if (has) withData++;
      var barHeight = has && max > 0 ? Math.max(1, (height - top - bottom) * hour.average_power_watts / max) : (has ? 1 : 2);
      var rect = document.createElementNS(ns, "rect");
      rect.setAttribute("x", (axis + index * slot + 1).toFixed(1));
      rect.setAttribute("width", (slot - 2).toFixed(1));
      rect.setAttribute("y", (height - bottom - barHeight).toFixed(1));
      rect.setAttribute("height", barHeight.toFixed(1));
      rect.setAttribute("class", has ? "has-data" : "no-data");
      rect.setAttribute("data-hour", String(hour.hour));
      var title = document.createElementNS(ns, "title");
      var label = (hour.hour < 10 ? "0" : "") + hour.hour + ":00";
      title.textContent = label + " – " + (has ? watts(hour.average_power_watts) : t.noData)
        + (hour.cost !== null && hour.cost !== undefined ? " · " + money(hour.cost, currency) : "");
      rect.appendChild(title);
      svg.appendChild(rect);
      if (index % 3 === 0) {
        var text = document.createElementNS(ns, "text");
        text.setAttribute("x", (axis + index * slot + 1).toFixed(1));
        text.setAttribute("y", String(height - 5));
        text.textContent = label;
        svg.appendChild(text);
      }
    });
    var box = $("chart-box");
    box.textContent = "";
    box.appendChild(svg);
    $("chart-summary").textContent = withData + t.hoursWithData;
  }

  // include automations.js

  // include alerts.js

  // include live.js

  function start() {
    translate();
    startAutomations();
    startAlerts();
    $("login-form").addEventListener("submit", function (event) {
      event.preventDefault();
      $("login-error").textContent = "";
      api("POST", "/login", { username: $("login-username").value, password: $("login-password").value })
        .then(function (session) {
          state.token = session.token;
          sessionStorage.setItem("outletd-token", session.token);
          $("login-password").value = "";
          show("outlets");
        }).catch(function (error) {
          $("login-error").textContent = error.status === 429 ? t.tooMany : error.status === 401 ? t.wrongLogin
            : t.failed + error.message;
        });
    });
    $("logout").addEventListener("click", function () {
      api("POST", "/logout").catch(function () {}).then(function () { endSession(""); });
    });
    $("add-outlet").addEventListener("click", function () {
      $("add-form").reset();
      $("add-error").textContent = "";
      show("add");
    });
    $("add-cancel").addEventListener("click", function () { show("outlets"); });
    $("add-form").addEventListener("submit", function (event) {
      event.preventDefault();
      // The code field also takes CODE:KEY, as a QR code on the label carries it.
      var code = $("add-code").value.trim(), key = $("add-key").value.trim(), colon = code.indexOf(":");
      if (colon >= 0 && !key) { key = code.slice(colon + 1).trim(); code = code.slice(0, colon); }
      var claim = { code: code, name: $("add-name").value, description: $("add-description").value };
      if (key) claim.claim_key = key;
      api("POST", "/outlets", claim)
        .then(function () { show("outlets"); })
        .catch(function (error) {
          $("add-error").textContent = error.status === 404 ? t.unknownCode
            : error.status === 429 ? t.tooManyClaims : t.failed + error.message;
        });
    });
    $("switch-on").addEventListener("click", function () { switchTo("on"); });
    $("switch-off").addEventListener("click", function () { switchTo("off"); });
    $("detail-back").addEventListener("click", function () { $("switch-status").textContent = ""; show("outlets"); });
    $("open-chart").addEventListener("click", function () { $("chart-date").value = ""; show("chart"); });
    $("chart-back").addEventListener("click", function () { show("detail"); });
    $("detail-edit").addEventListener("click", function () {
      $("edit-name").value = state.outlet ? state.outlet.name : "";
      $("edit-description").value = state.outlet ? state.outlet.description : "";
      $("edit-error").textContent = "";
      show("edit");
    });
    $("edit-cancel").addEventListener("click", function () { show("detail"); });
    $("edit-form").addEventListener("submit", function (event) {
      event.preventDefault();
      api("PATCH", "/outlets/" + encodeURIComponent(state.code),
          { name: $("edit-name").value, description: $("edit-description").value })
        .then(function () { show("detail"); })
        .catch(function (error) { $("edit-error").textContent = t.failed + error.message; });
    });
    $("chart-date").addEventListener("change", loadChart);
    $("chart-date").max = today();
    $("detail-release").addEventListener("click", function () {
      if (!window.confirm(t.releaseConfirm)) return;
      api("DELETE", "/outlets/" + encodeURIComponent(state.code)).then(function () { show("outlets"); })
        .catch(function () {});
    });
    show(state.token ? "outlets" : "login");
  }

  document.addEventListener("DOMContentLoaded", start);
})();
