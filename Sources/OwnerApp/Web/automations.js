// The detail's automations section (automations.html). Included in app.js's closure: `$`, `api`, `t`, `language`
// and `state` are app.js's. Everything the server says is set as text, never as HTML.
var automationTexts = {
  en: {
    automations: "Automations", noAutomations: "None yet: add a timer, a schedule or a power rule below.",
    automationKind: "New automation", kindTimer: "Timer", kindSchedule: "Schedule",
    kindOverPower: "Off above a power", kindIdle: "Off when idle", automationState: "What",
    automationIn: "In", minutes: "minutes", hours: "hours", seconds: "seconds", unit: "Unit",
    automationAt: "At (the outlet's local time)", automationDays: "Days", automationWatts: "Power (W)",
    automationFor: "For", addAutomation: "Add automation", enabled: "Enabled", remove: "Remove",
    dayMon: "Mon", dayTue: "Tue", dayWed: "Wed", dayThu: "Thu", dayFri: "Fri", daySat: "Sat", daySun: "Sun",
    everyDay: "every day", weekdays: "Mon–Fri", weekends: "Sat and Sun", atTime: "at", onDate: "on",
    offAbove: "Turn off at or above {w} for {d}", offIdle: "Turn off at or below {w} for {d} while on",
    nextAutomation: "Next: ", lastAutomation: "Last automation: ", noNextAutomation: "Nothing scheduled.",
    results: { fired: "ran", skipped: "skipped", missed: "missed" }
  },
  "pt-BR": {
    automations: "Automações", noAutomations: "Nenhuma ainda: adicione um temporizador, um horário ou uma regra de potência abaixo.",
    automationKind: "Nova automação", kindTimer: "Temporizador", kindSchedule: "Horário",
    kindOverPower: "Desligar acima de uma potência", kindIdle: "Desligar quando ociosa", automationState: "O quê",
    automationIn: "Daqui a", minutes: "minutos", hours: "horas", seconds: "segundos", unit: "Unidade",
    automationAt: "Às (hora local da tomada)", automationDays: "Dias", automationWatts: "Potência (W)",
    automationFor: "Por", addAutomation: "Adicionar automação", enabled: "Ativa", remove: "Remover",
    dayMon: "seg", dayTue: "ter", dayWed: "qua", dayThu: "qui", dayFri: "sex", daySat: "sáb", daySun: "dom",
    everyDay: "todos os dias", weekdays: "seg–sex", weekends: "sáb e dom", atTime: "às", onDate: "em",
    offAbove: "Desligar com {w} ou mais por {d}", offIdle: "Desligar com {w} ou menos por {d}, quando ligada",
    nextAutomation: "Próxima: ", lastAutomation: "Última automação: ", noNextAutomation: "Nada agendado.",
    results: { fired: "executada", skipped: "ignorada", missed: "perdida" }
  }
};
(function () {
  var extra = automationTexts[language];
  for (var key in extra) if (Object.prototype.hasOwnProperty.call(extra, key)) t[key] = extra[key];
})();
var automationDays = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
var automationSeen = null;

function dayName(day) { return t["day" + day.charAt(0).toUpperCase() + day.slice(1)] || day; }

function describeDays(days) {
  if (!days || days.length === 7) return t.everyDay;
  var key = days.join(",");
  if (key === "mon,tue,wed,thu,fri") return t.weekdays;
  if (key === "sat,sun") return t.weekends;
  return days.map(dayName).join(", ");
}

function durationText(seconds) {
  var parts = [], hours = Math.floor(seconds / 3600), minutes = Math.floor(seconds % 3600 / 60), rest = seconds % 60;
  if (hours) parts.push(hours + " h");
  if (minutes) parts.push(minutes + " min");
  if (rest || !parts.length) parts.push(rest + " s");
  return parts.join(" ");
}

function ruleWatts(value) {
  return new Intl.NumberFormat(language, { maximumFractionDigits: 1 }).format(value) + " W";
}

// An instant as the outlet's clock shows it: "Fri, Nov 27, 23:00".
function zoned(text, zone) {
  var date = new Date(text);
  if (isNaN(date.getTime())) return text;
  var options = { weekday: "short", day: "numeric", month: "short", hour: "2-digit", minute: "2-digit" };
  try {
    return new Intl.DateTimeFormat(language, Object.assign({ timeZone: zone || "UTC" }, options)).format(date);
  } catch (error) {
    return new Intl.DateTimeFormat(language, options).format(date);
  }
}

function action(value) { return value === "on" ? t.turnOn : t.turnOff; }

function describeAutomation(automation) {
  switch (automation.kind) {
    case "schedule":
      return action(automation.state) + " " + t.atTime + " " + automation.at + " · " + describeDays(automation.days);
    case "timer": return action(automation.state) + " " + t.onDate + " " + zoned(automation.at, automation.time_zone);
    case "over-power":
      return t.offAbove.replace("{w}", ruleWatts(automation.watts)).replace("{d}", durationText(automation.for_seconds));
    case "idle":
      return t.offIdle.replace("{w}", ruleWatts(automation.watts)).replace("{d}", durationText(automation.for_seconds));
    default: return automation.summary;
  }
}

function firingText(firing, zone) {
  var text = (t.results[firing.result] || firing.result) + " – " + zoned(firing.at, zone);
  if (firing.state) text += " – " + action(firing.state);
  if (firing.command_status) text += " (" + (t.statuses[firing.command_status] || firing.command_status) + ")";
  if (firing.result !== "fired" && firing.reason) text += " – " + firing.reason;
  return text;
}

// The detail's glance: what happens next and what the last automation did (from GET /outlets/{code}).
function showAutomationGlance(outlet) {
  var next = outlet.next_automation, last = outlet.last_automation;
  $("automation-next").textContent = next
    ? t.nextAutomation + action(next.state) + " – " + zoned(next.at, outlet.timezone) : t.noNextAutomation;
  $("automation-last").textContent = last ? t.lastAutomation + firingText(last, outlet.timezone) : "";
  $("automation-last").hidden = !last;
  // Something fired or changed elsewhere (another device, the runner): the list follows.
  var seen = JSON.stringify([next, last && last.id, last && last.command_status]);
  if (automationSeen !== null && seen !== automationSeen) loadAutomations();
  automationSeen = seen;
}

function loadAutomations() {
  var code = state.code;
  api("GET", "/outlets/" + encodeURIComponent(code) + "/automations").then(function (list) {
    if (code !== state.code) return;
    var box = $("automation-list");
    box.textContent = "";
    $("automations-empty").hidden = list.length > 0;
    list.forEach(function (automation) { box.appendChild(automationItem(automation)); });
  }).catch(function (error) {
    if (error.status !== 401) $("automation-error").textContent = t.failed + error.message;
  });
}

function automationItem(automation) {
  var item = document.createElement("li");
  item.className = "automation" + (automation.enabled ? "" : " paused");
  item.setAttribute("data-id", String(automation.id));
  item.setAttribute("data-kind", automation.kind);
  var text = document.createElement("span");
  text.className = "automation-text";
  var summary = document.createElement("strong");
  summary.className = "automation-summary";
  summary.textContent = describeAutomation(automation);
  summary.title = automation.summary;
  text.appendChild(summary);
  if (automation.next_at) {
    var next = document.createElement("span");
    next.className = "muted automation-next";
    next.textContent = t.nextAutomation + zoned(automation.next_at, automation.time_zone);
    text.appendChild(next);
  }
  if (automation.last) {
    var last = document.createElement("span");
    last.className = "muted automation-last";
    last.textContent = t.lastAutomation + firingText(automation.last, automation.time_zone);
    text.appendChild(last);
  }
  var toggle = document.createElement("label");
  var box = document.createElement("input");
  box.type = "checkbox";
  box.className = "automation-enabled";
  box.checked = automation.enabled;
  box.addEventListener("change", function () {
    box.disabled = true;
    api("PATCH", "/automations/" + automation.id, { enabled: box.checked }).then(function () {
      loadAutomations();
      loadDetail();
    }).catch(function (error) {
      box.checked = !box.checked;
      box.disabled = false;
      $("automation-error").textContent = t.failed + error.message;
    });
  });
  var word = document.createElement("span");
  word.textContent = " " + t.enabled;
  toggle.appendChild(box);
  toggle.appendChild(word);
  var remove = document.createElement("button");
  remove.type = "button";
  remove.className = "automation-remove";
  remove.textContent = t.remove;
  remove.addEventListener("click", function () {
    remove.disabled = true;
    api("DELETE", "/automations/" + automation.id).then(function () {
      loadAutomations();
      loadDetail();
    }).catch(function (error) {
      remove.disabled = false;
      $("automation-error").textContent = t.failed + error.message;
    });
  });
  item.appendChild(text);
  item.appendChild(toggle);
  item.appendChild(remove);
  return item;
}

function showAutomationFields() {
  var kind = $("automation-kind").value;
  $("automation-state-fields").hidden = kind !== "timer" && kind !== "schedule";
  $("automation-timer-fields").hidden = kind !== "timer";
  $("automation-schedule-fields").hidden = kind !== "schedule";
  $("automation-power-fields").hidden = kind !== "over-power" && kind !== "idle";
}

function numberIn(id) {
  var text = $(id).value.trim();
  return text === "" ? null : Number(text);
}

function automationBody() {
  var kind = $("automation-kind").value, body = { kind: kind };
  if (kind === "timer" || kind === "schedule") body.state = $("automation-state").value;
  if (kind === "timer") {
    var amount = numberIn("automation-in");
    body.in_seconds = amount === null ? null : Math.round(amount * Number($("automation-in-unit").value));
  } else if (kind === "schedule") {
    body.at = $("automation-at").value.slice(0, 5);
    body.days = automationDays.filter(function (day) {
      return document.querySelector("#automation-days input[value=" + day + "]").checked;
    });
  } else {
    body.watts = numberIn("automation-watts");
    var hold = numberIn("automation-for");
    body.for_seconds = hold === null ? null : Math.round(hold * Number($("automation-for-unit").value));
  }
  return body;
}

function startAutomations() {
  $("automation-in-unit").setAttribute("aria-label", t.unit);
  $("automation-for-unit").setAttribute("aria-label", t.unit);
  $("automation-kind").addEventListener("change", function () {
    var kind = $("automation-kind").value;
    if (kind === "idle") { $("automation-watts").value = "5"; $("automation-for").value = "30"; $("automation-for-unit").value = "60"; }
    if (kind === "over-power") { $("automation-watts").value = "2000"; $("automation-for").value = "10"; $("automation-for-unit").value = "1"; }
    $("automation-error").textContent = "";
    showAutomationFields();
  });
  $("automation-form").addEventListener("submit", function (event) {
    event.preventDefault();
    var button = $("automation-add");
    $("automation-error").textContent = "";
    button.disabled = true;
    api("POST", "/outlets/" + encodeURIComponent(state.code) + "/automations", automationBody())
      .then(function () {
        button.disabled = false;
        loadAutomations();
        loadDetail();
      }).catch(function (error) {
        button.disabled = false;
        $("automation-error").textContent = t.failed + error.message;
      });
  });
  showAutomationFields();
}

function openAutomations() {
  automationSeen = null;
  $("automation-error").textContent = "";
  $("automation-next").textContent = "";
  $("automation-last").textContent = "";
  $("automation-list").textContent = "";
  loadAutomations();
}
