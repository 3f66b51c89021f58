extension OwnerPage {
    /// The outlet detail's "Automations" section: what happens next, what the last automation did, the outlet's
    /// automations (each with its enabled toggle and a remove button) and a form to add a timer, a schedule, an
    /// over-power or an idle rule. Placed in `indexHTML`'s detail screen.
    static let automationsHTML = #"""
        <div id="automations" class="automations">
            <h3 data-t="automations">Automations</h3>
            <p id="automation-next" class="muted" aria-live="polite"></p>
            <p id="automation-last" class="muted" aria-live="polite"></p>
            <p id="automations-empty" class="muted" data-t="noAutomations" hidden>None yet.</p>
            <ul id="automation-list" class="automation-list"></ul>
            <form id="automation-form" novalidate>
              <label for="automation-kind" data-t="automationKind">New automation</label>
              <select id="automation-kind" name="kind">
                <option value="timer" data-t="kindTimer">Timer</option>
                <option value="schedule" data-t="kindSchedule">Schedule</option>
                <option value="over-power" data-t="kindOverPower">Off above a power</option>
                <option value="idle" data-t="kindIdle">Off when idle</option>
              </select>
              <div id="automation-state-fields" class="automation-fields">
                <label for="automation-state" data-t="automationState">What</label>
                <select id="automation-state" name="state">
                  <option value="off" data-t="turnOff">Turn off</option>
                  <option value="on" data-t="turnOn">Turn on</option>
                </select>
              </div>
              <div id="automation-timer-fields" class="automation-fields">
                <label for="automation-in" data-t="automationIn">In</label>
                <div class="inline">
                  <input id="automation-in" name="in" type="number" min="1" step="1" value="30" inputmode="numeric">
                  <select id="automation-in-unit" name="in_unit" aria-label="Unit">
                    <option value="60" data-t="minutes">minutes</option>
                    <option value="3600" data-t="hours">hours</option>
                  </select>
                </div>
              </div>
              <div id="automation-schedule-fields" class="automation-fields" hidden>
                <label for="automation-at" data-t="automationAt">At (the outlet's local time)</label>
                <input id="automation-at" name="at" type="time" value="23:00">
                <fieldset id="automation-days">
                  <legend data-t="automationDays">Days</legend>
                  <label><input type="checkbox" value="mon" checked> <span data-t="dayMon">Mon</span></label>
                  <label><input type="checkbox" value="tue" checked> <span data-t="dayTue">Tue</span></label>
                  <label><input type="checkbox" value="wed" checked> <span data-t="dayWed">Wed</span></label>
                  <label><input type="checkbox" value="thu" checked> <span data-t="dayThu">Thu</span></label>
                  <label><input type="checkbox" value="fri" checked> <span data-t="dayFri">Fri</span></label>
                  <label><input type="checkbox" value="sat" checked> <span data-t="daySat">Sat</span></label>
                  <label><input type="checkbox" value="sun" checked> <span data-t="daySun">Sun</span></label>
                </fieldset>
              </div>
              <div id="automation-power-fields" class="automation-fields" hidden>
                <label for="automation-watts" data-t="automationWatts">Power (W)</label>
                <input id="automation-watts" name="watts" type="number" min="0" max="100000" step="any" value="2000">
                <label for="automation-for" data-t="automationFor">For</label>
                <div class="inline">
                  <input id="automation-for" name="for" type="number" min="1" step="1" value="10" inputmode="numeric">
                  <select id="automation-for-unit" name="for_unit" aria-label="Unit">
                    <option value="1" data-t="seconds">seconds</option>
                    <option value="60" data-t="minutes">minutes</option>
                  </select>
                </div>
              </div>
              <p class="error" id="automation-error" role="alert"></p>
              <button type="submit" id="automation-add" data-t="addAutomation">Add automation</button>
            </form>
          </div>
        """#

    static let automationsCSS = #"""
        [hidden] { display: none !important; }
        .automations { margin-top: 1rem; border-top: 1px solid #e3e7ec; }
        .automations h3 { font-size: 1.05rem; }
        .automation-list { list-style: none; padding: 0; }
        .automation-list li { display: grid; grid-template-columns: 1fr auto auto; gap: .5rem; align-items: center;
                              border-bottom: 1px solid #e3e7ec; padding: .4rem 0; }
        .automation-list .automation-text { display: grid; }
        .automation-list .paused .automation-summary { color: #59606a; text-decoration: line-through; }
        .automation-list label, #automation-days label { font-weight: normal; }
        .automation-fields { display: grid; gap: .4rem; }
        .inline { display: flex; gap: .4rem; }
        select { font: inherit; padding: .4rem; border: 1px solid #99a; border-radius: .3rem; background: #fff; }
        #automation-days { display: flex; flex-wrap: wrap; gap: .3rem .8rem; border: 1px solid #ccd;
                           border-radius: .3rem; }
        """#

    /// The section's script, part of app.js (inside its closure: `$`, `api`, `t`, `language` and `state` are
    /// app.js's). Everything the server says is set as text, never as HTML.
    static let automationsJS = #"""
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
        """#
}
