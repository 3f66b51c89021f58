// The outlet list's alerts section (alerts.html, docs/ALERTS.md): the badge follows the live stream's `alerts`
// event (the open count), and the list is read (GET /api/v1/alerts) when the screen opens and when the count
// changes. Included in app.js's closure: `$`, `api`, `t`, `language` and `state` are app.js's. Everything the
// server says is set as text, never as HTML.
var alertTexts = {
  en: {
    alerts: "Alerts", noAlerts: "Nothing to report.", alertOpen: "open", alertResolved: "resolved",
    acknowledge: "Acknowledge", acknowledged: "acknowledged",
    alertKinds: { "offline": "offline", "on-too-long": "on too long", "standby": "standby above the limit",
                  "budget": "month over budget", "command-failed": "switch not confirmed" },
    allOutlets: "all outlets"
  },
  "pt-BR": {
    alerts: "Alertas", noAlerts: "Nada a relatar.", alertOpen: "aberto", alertResolved: "resolvido",
    acknowledge: "Reconhecer", acknowledged: "reconhecido",
    alertKinds: { "offline": "offline", "on-too-long": "ligada há tempo demais", "standby": "espera acima do limite",
                  "budget": "mês acima do orçamento", "command-failed": "comando não confirmado" },
    allOutlets: "todas as tomadas"
  }
};
(function () {
  var extra = alertTexts[language];
  for (var key in extra) if (Object.prototype.hasOwnProperty.call(extra, key)) t[key] = extra[key];
})();

function showAlertCount(open) {
  var badge = $("alerts-badge");
  badge.textContent = String(open);
  badge.hidden = !(open > 0);
  document.body.dataset.alertsOpen = String(open);
}

function loadAlerts() {
  api("GET", "/alerts").then(renderAlerts).catch(function () {});
}

function renderAlerts(answer) {
  showAlertCount(answer.open_count);
  var list = $("alert-list");
  list.textContent = "";
  $("alerts-empty").hidden = answer.incidents.length > 0;
  answer.incidents.slice(0, 20).forEach(function (incident) {
    var item = document.createElement("li");
    item.className = "alert " + incident.state;
    item.setAttribute("data-incident", String(incident.id));
    item.setAttribute("data-state", incident.state);
    var text = document.createElement("span");
    var when = new Date(incident.state === "open" ? incident.opened_at : incident.resolved_at);
    text.textContent = (incident.outlet_name || incident.outlet || t.allOutlets) + ": "
      + (t.alertKinds[incident.kind] || incident.kind) + " · "
      + (incident.state === "open" ? t.alertOpen : t.alertResolved) + " "
      + when.toLocaleString(language) + (incident.acknowledged_at ? " · " + t.acknowledged : "");
    item.appendChild(text);
    if (incident.state === "open" && !incident.acknowledged_at) {
      var button = document.createElement("button");
      button.type = "button";
      button.textContent = t.acknowledge;
      button.addEventListener("click", function () {
        api("POST", "/alerts/" + incident.id + "/ack").then(loadAlerts).catch(function () {});
      });
      item.appendChild(button);
    }
    list.appendChild(item);
  });
}
