// The page's alerts (docs/ALERTS.md). On the outlet list (alerts.html): the badge follows the live stream's `alerts`
// event (the open count), and the list is read (GET /api/v1/alerts) when the screen opens and when the count
// changes; an open incident is acknowledged or snoozed; the owner's channels are listed, added (email, webhook, this
// browser by Web Push through sw.js), paused, resumed and removed. On the detail (alert-rules.html): the outlet's rules, set by kind
// and removed. Included in app.js's closure: `$`, `api`, `t`, `language` and `state` are app.js's. Everything the
// server says is set as text, never as HTML.
var alertTexts = {
  en: {
    alerts: "Alerts", noAlerts: "Nothing to report.", alertOpen: "open", alertResolved: "resolved",
    acknowledge: "Acknowledge", acknowledged: "acknowledged",
    alertKinds: { "offline": "offline", "on-too-long": "on too long", "standby": "standby above the limit",
                  "budget": "month over budget", "command-failed": "switch not confirmed" },
    allOutlets: "all outlets", snoozeHour: "Snooze 1 h", snoozeDay: "Snooze 1 day", snoozedUntil: "snoozed until",
    alertChannels: "Where alerts are sent", noChannels: "Only here, on this page.", channelKind: "Send alerts to",
    channelEmail: "Email", channelWebhook: "Webhook", channelEmailAddress: "Email address",
    channelWebhookURL: "Webhook URL (HTTPS)", channelLanguage: "Language", addChannel: "Add",
    channelKinds: { email: "email", webhook: "webhook", webpush: "browser" }, failing: "failing",
    channelPause: "Pause", channelResume: "Resume", channelPaused: "paused",
    webhookSecret: "The webhook's signing secret (Standard Webhooks), shown only now: ",
    notifyBrowser: "Notify this browser", pushUnsupported: "This browser cannot receive notifications.",
    pushOff: "Notifications to browsers are not set up on this server.", pushAsking: "Subscribing…",
    pushOn: "This browser is notified.", pushFailed: "This browser could not subscribe: ",
    alertRules: "Alerts for this outlet", noAlertRules: "None: alerts of all your outlets still apply.",
    alertRuleKind: "Alert me when", ruleOffline: "it goes offline", ruleOnTooLong: "it stays on too long",
    ruleStandby: "its standby power is above", ruleBudget: "its projected month costs more than",
    ruleCommandFailed: "a switch is not confirmed",
    alertRuleAfter: "After (minutes without a reading; empty: the default)", alertRuleFor: "For (minutes)",
    alertRuleWatts: "Power (W)", alertRuleWattsAbove: "Above (W; empty: whenever on)",
    alertRuleAmount: "Amount a month", setAlertRule: "Set alert", ruleAfter: "after", ruleFor: "for",
    ruleAbove: "above", ruleDefault: "default delay"
  },
  "pt-BR": {
    alerts: "Alertas", noAlerts: "Nada a relatar.", alertOpen: "aberto", alertResolved: "resolvido",
    acknowledge: "Reconhecer", acknowledged: "reconhecido",
    alertKinds: { "offline": "offline", "on-too-long": "ligada há tempo demais", "standby": "espera acima do limite",
                  "budget": "mês acima do orçamento", "command-failed": "comando não confirmado" },
    allOutlets: "todas as tomadas", snoozeHour: "Adiar 1 h", snoozeDay: "Adiar 1 dia", snoozedUntil: "adiado até",
    alertChannels: "Para onde os alertas vão", noChannels: "Só aqui, nesta página.", channelKind: "Enviar alertas para",
    channelEmail: "E-mail", channelWebhook: "Webhook", channelEmailAddress: "Endereço de e-mail",
    channelWebhookURL: "URL do webhook (HTTPS)", channelLanguage: "Idioma", addChannel: "Adicionar",
    channelKinds: { email: "e-mail", webhook: "webhook", webpush: "navegador" }, failing: "com falha",
    channelPause: "Pausar", channelResume: "Retomar", channelPaused: "pausado",
    webhookSecret: "O segredo de assinatura do webhook (Standard Webhooks), mostrado só agora: ",
    notifyBrowser: "Notificar este navegador", pushUnsupported: "Este navegador não recebe notificações.",
    pushOff: "As notificações para navegadores não estão configuradas neste servidor.", pushAsking: "Assinando…",
    pushOn: "Este navegador é notificado.", pushFailed: "Este navegador não pôde assinar: ",
    alertRules: "Alertas desta tomada", noAlertRules: "Nenhum: os alertas de todas as suas tomadas continuam valendo.",
    alertRuleKind: "Avisar quando", ruleOffline: "ficar offline", ruleOnTooLong: "ficar ligada tempo demais",
    ruleStandby: "a potência em espera passar de", ruleBudget: "a previsão do mês passar de",
    ruleCommandFailed: "um comando não for confirmado",
    alertRuleAfter: "Depois de (minutos sem leitura; vazio: o padrão)", alertRuleFor: "Por (minutos)",
    alertRuleWatts: "Potência (W)", alertRuleWattsAbove: "Acima de (W; vazio: sempre que ligada)",
    alertRuleAmount: "Valor por mês", setAlertRule: "Definir alerta", ruleAfter: "depois de", ruleFor: "por",
    ruleAbove: "acima de", ruleDefault: "prazo padrão"
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
    var snoozed = incident.snoozed_until && new Date(incident.snoozed_until) > new Date();
    text.textContent = (incident.outlet_name || incident.outlet || t.allOutlets) + ": "
      + (t.alertKinds[incident.kind] || incident.kind) + " · "
      + (incident.state === "open" ? t.alertOpen : t.alertResolved) + " "
      + when.toLocaleString(language) + (incident.acknowledged_at ? " · " + t.acknowledged : "")
      + (snoozed && incident.state === "open"
        ? " · " + t.snoozedUntil + " " + new Date(incident.snoozed_until).toLocaleString(language) : "");
    item.appendChild(text);
    if (incident.state === "open") {
      var buttons = document.createElement("span");
      buttons.className = "alert-buttons";
      if (!incident.acknowledged_at) {
        buttons.appendChild(alertButton(t.acknowledge, "alert-ack", function () {
          return api("POST", "/alerts/" + incident.id + "/ack");
        }));
      }
      [[3600, t.snoozeHour, "alert-snooze-hour"], [86400, t.snoozeDay, "alert-snooze-day"]].forEach(function (choice) {
        buttons.appendChild(alertButton(choice[1], choice[2], function () {
          return api("POST", "/alerts/" + incident.id + "/snooze", { seconds: choice[0] });
        }));
      });
      item.appendChild(buttons);
    }
    list.appendChild(item);
  });
}

// A button of an incident: `run` (a request), then the list again; a refusal shown under the list.
function alertButton(label, className, run) {
  var button = document.createElement("button");
  button.type = "button";
  button.className = className;
  button.textContent = label;
  button.addEventListener("click", function () {
    button.disabled = true;
    $("alert-error").textContent = "";
    run().then(loadAlerts).catch(function (error) {
      button.disabled = false;
      $("alert-error").textContent = t.failed + error.message;
    });
  });
  return button;
}

function removeButton(className, path, after, errorId) {
  var remove = document.createElement("button");
  remove.type = "button";
  remove.className = className;
  remove.textContent = t.remove;
  remove.addEventListener("click", function () {
    remove.disabled = true;
    api("DELETE", path).then(after).catch(function (error) {
      remove.disabled = false;
      $(errorId).textContent = t.failed + error.message;
    });
  });
  return remove;
}

// MARK: channels (the outlet list)

function loadAlertChannels() {
  api("GET", "/alert-channels").then(function (channels) {
    var list = $("alert-channel-list");
    list.textContent = "";
    $("alert-channels-empty").hidden = channels.length > 0;
    channels.forEach(function (channel) {
      var item = document.createElement("li");
      item.setAttribute("data-channel", String(channel.id));
      item.setAttribute("data-kind", channel.kind);
      var text = document.createElement("span");
      text.className = "channel-text";
      text.textContent = (t.channelKinds[channel.kind] || channel.kind) + ": "
        + (channel.kind === "webpush" ? hostOf(channel.target) : channel.target) + " · " + channel.language
        + (channel.enabled ? "" : " · " + t.channelPaused)
        + (channel.failing ? " · " + t.failing + (channel.last_error ? " (" + channel.last_error + ")" : "") : "");
      if (channel.failing) item.className = "open";
      item.appendChild(text);
      item.appendChild(pauseButton(channel));
      item.appendChild(removeButton("channel-remove", "/alert-channels/" + channel.id, loadAlertChannels,
                                    "alert-channel-error"));
      list.appendChild(item);
    });
  }).catch(function (error) {
    if (error.status !== 401) $("alert-channel-error").textContent = t.failed + error.message;
  });
}

// Pauses a channel (what is pending for it is dropped) or resumes it.
function pauseButton(channel) {
  var button = document.createElement("button");
  button.type = "button";
  button.className = channel.enabled ? "channel-pause" : "channel-resume";
  button.textContent = channel.enabled ? t.channelPause : t.channelResume;
  button.addEventListener("click", function () {
    button.disabled = true;
    $("alert-channel-error").textContent = "";
    api("PATCH", "/alert-channels/" + channel.id, { enabled: !channel.enabled }).then(loadAlertChannels)
      .catch(function (error) {
        button.disabled = false;
        $("alert-channel-error").textContent = t.failed + error.message;
      });
  });
  return button;
}

function hostOf(url) {
  try { return new URL(url).host; } catch (error) { return url; }
}

// A Standard Webhooks secret made here: "whsec_" and 24 random bytes in base64. Sent once; the server never shows it.
function webhookSecret() {
  var bytes = new Uint8Array(24);
  crypto.getRandomValues(bytes);
  return "whsec_" + btoa(String.fromCharCode.apply(null, Array.prototype.slice.call(bytes)));
}

function showChannelFields() {
  var webhook = $("alert-channel-kind").value === "webhook";
  $("alert-channel-target-label").textContent = webhook ? t.channelWebhookURL : t.channelEmailAddress;
  $("alert-channel-target").type = webhook ? "url" : "email";
}

function addChannel(event) {
  event.preventDefault();
  var button = $("alert-channel-add"), kind = $("alert-channel-kind").value;
  var body = { kind: kind, target: $("alert-channel-target").value.trim(), language: $("alert-channel-language").value };
  if (kind === "webhook") body.secret = webhookSecret();
  $("alert-channel-error").textContent = "";
  $("alert-channel-secret").hidden = true;
  button.disabled = true;
  api("POST", "/alert-channels", body).then(function () {
    button.disabled = false;
    $("alert-channel-target").value = "";
    if (body.secret) {
      $("alert-channel-secret").textContent = t.webhookSecret + body.secret;
      $("alert-channel-secret").hidden = false;
    }
    loadAlertChannels();
  }).catch(function (error) {
    button.disabled = false;
    $("alert-channel-error").textContent = t.failed + error.message;
  });
}

// MARK: Web Push (sw.js)

function base64urlBytes(text) {
  var plain = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4));
  var bytes = new Uint8Array(plain.length);
  for (var i = 0; i < plain.length; i++) bytes[i] = plain.charCodeAt(i);
  return bytes;
}

function pushStatus(text, className) {
  $("push-status").textContent = text;
  $("push-status").className = className || "";
}

// The worker registered at once (it only shows what is pushed); the subscription only when the owner asks.
function registerWorker() {
  if (!("serviceWorker" in navigator)) return null;
  return navigator.serviceWorker.register("/sw.js").catch(function () { return null; });
}

function subscribeBrowser() {
  if (!("serviceWorker" in navigator) || !("PushManager" in window)) {
    pushStatus(t.pushUnsupported, "failed");
    return;
  }
  var button = $("push-subscribe");
  button.disabled = true;
  pushStatus(t.pushAsking, "pending");
  var key;
  api("GET", "/push/key").then(function (answer) {
    key = answer.key;
    return registerWorker();
  }, function (error) {
    throw error.status === 404 ? { message: t.pushOff, off: true } : error;
  }).then(function () {
    return navigator.serviceWorker.ready;
  }).then(function (registration) {
    document.body.dataset.pushSubscribing = "true";
    return registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: base64urlBytes(key) });
  }).then(function (subscription) {
    var json = subscription.toJSON();
    return api("POST", "/alert-channels", { kind: "webpush", target: json.endpoint, p256dh: json.keys.p256dh,
                                            auth: json.keys.auth, language: language });
  }).then(function () {
    button.disabled = false;
    pushStatus(t.pushOn, "confirmed");
    loadAlertChannels();
  }).catch(function (error) {
    button.disabled = false;
    pushStatus(error && error.off ? t.pushOff
      : t.pushFailed + (error && (error.message || error.name) ? (error.name ? error.name + ": " : "")
        + (error.message || "") : String(error)), "failed");
  });
}

// MARK: rules (the outlet detail)

function describeAlertRule(rule) {
  var p = rule.parameters || {}, parts = [t.alertKinds[rule.kind] || rule.kind];
  if (rule.kind === "offline") parts.push(p.after_seconds ? t.ruleAfter + " " + durationText(p.after_seconds) : t.ruleDefault);
  if (rule.kind === "on-too-long") {
    if (p.for_seconds) parts.push(t.ruleFor + " " + durationText(p.for_seconds));
    if (p.watts !== null && p.watts !== undefined) parts.push(t.ruleAbove + " " + ruleWatts(p.watts));
  }
  if (rule.kind === "standby" && p.watts !== null && p.watts !== undefined) parts.push(t.ruleAbove + " " + ruleWatts(p.watts));
  if (rule.kind === "budget" && p.amount) {
    var currency = state.outlet && state.outlet.currency;
    parts.push(t.ruleAbove + " " + (currency ? money(Number(p.amount), currency) : p.amount));
  }
  return parts.join(" · ");
}

function loadAlertRules() {
  var code = state.code;
  api("GET", "/alert-rules").then(function (rules) {
    if (code !== state.code) return;
    var mine = rules.filter(function (rule) { return rule.outlet === code; });
    var list = $("alert-rule-list");
    list.textContent = "";
    $("alert-rules-empty").hidden = mine.length > 0;
    mine.forEach(function (rule) {
      var item = document.createElement("li");
      item.setAttribute("data-id", String(rule.id));
      item.setAttribute("data-kind", rule.kind);
      var text = document.createElement("span");
      text.className = "automation-text alert-rule-text";
      text.textContent = describeAlertRule(rule);
      item.appendChild(text);
      item.appendChild(removeButton("alert-rule-remove", "/alert-rules/" + rule.id, loadAlertRules, "alert-rule-error"));
      list.appendChild(item);
    });
  }).catch(function (error) {
    if (error.status !== 401) $("alert-rule-error").textContent = t.failed + error.message;
  });
}

function showAlertRuleFields() {
  var kind = $("alert-rule-kind").value;
  $("alert-rule-after-fields").hidden = kind !== "offline";
  $("alert-rule-for-fields").hidden = kind !== "on-too-long";
  $("alert-rule-watts-fields").hidden = kind !== "on-too-long" && kind !== "standby";
  $("alert-rule-watts-label").textContent = kind === "standby" ? t.alertRuleWatts : t.alertRuleWattsAbove;
  $("alert-rule-amount-fields").hidden = kind !== "budget";
}

// The form as the API's body: minutes as whole seconds, an empty field left out (the server's default or its reason).
function alertRuleBody() {
  var kind = $("alert-rule-kind").value, body = { kind: kind, outlet: state.code };
  function minutes(id) { var value = numberIn(id); return value === null ? null : Math.round(value * 60); }
  if (kind === "offline" && numberIn("alert-rule-after") !== null) body.after_seconds = minutes("alert-rule-after");
  if (kind === "on-too-long") body.for_seconds = minutes("alert-rule-for");
  if ((kind === "on-too-long" || kind === "standby") && numberIn("alert-rule-watts") !== null) {
    body.watts = numberIn("alert-rule-watts");
  }
  if (kind === "budget") body.amount = $("alert-rule-amount").value.trim().replace(",", ".");
  Object.keys(body).forEach(function (key) { if (body[key] === null) delete body[key]; });
  return body;
}

function setAlertRule(event) {
  event.preventDefault();
  var button = $("alert-rule-save");
  $("alert-rule-error").textContent = "";
  button.disabled = true;
  api("PUT", "/alert-rules", alertRuleBody()).then(function () {
    button.disabled = false;
    loadAlertRules();
  }).catch(function (error) {
    button.disabled = false;
    $("alert-rule-error").textContent = t.failed + error.message;
  });
}

function openAlertRules() {
  $("alert-rule-error").textContent = "";
  $("alert-rule-list").textContent = "";
  loadAlertRules();
}

function openAlerts() {
  loadAlerts();
  loadAlertChannels();
}

function startAlerts() {
  $("alert-channel-language").value = language;
  $("alert-channel-kind").addEventListener("change", showChannelFields);
  $("alert-channel-form").addEventListener("submit", addChannel);
  $("push-subscribe").addEventListener("click", subscribeBrowser);
  $("alert-rule-kind").addEventListener("change", function () {
    $("alert-rule-error").textContent = "";
    showAlertRuleFields();
  });
  $("alert-rule-form").addEventListener("submit", setAlertRule);
  showChannelFields();
  showAlertRuleFields();
  registerWorker();
}
