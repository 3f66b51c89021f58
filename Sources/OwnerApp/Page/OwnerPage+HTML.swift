extension OwnerPage {
    /// The page's one HTML document: six screens, one shown at a time by app.js; the detail's automations section
    /// is in OwnerPage+Automations.swift.
    static let indexHTML = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>outletd</title>
        <link rel="stylesheet" href="/app.css">
        <script src="/app.js" defer></script>
        </head>
        <body>
        <header><h1 data-t="title">My outlets</h1>
        <button type="button" id="logout" hidden data-t="logout">Log out</button></header>
        <main>
        <section id="screen-login" hidden>
          <h2 data-t="login">Log in</h2>
          <form id="login-form">
            <label for="login-username" data-t="username">User name</label>
            <input id="login-username" name="username" autocomplete="username" required>
            <label for="login-password" data-t="password">Password</label>
            <input id="login-password" name="password" type="password" autocomplete="current-password" required>
            <p class="error" id="login-error" role="alert"></p>
            <button type="submit" id="login-submit" data-t="loginButton">Log in</button>
          </form>
        </section>
        <section id="screen-outlets" hidden>
          <h2 data-t="outlets">Outlets</h2>
          <p id="outlets-empty" hidden data-t="noOutlets">No outlets yet. Add one with the code printed on it.</p>
          <ul id="outlet-list" class="outlets"></ul>
          <button type="button" id="add-outlet" data-t="addOutlet">Add outlet</button>
          <p class="muted" id="outlets-updated" aria-live="polite"></p>
        </section>
        <section id="screen-add" hidden>
          <h2 data-t="addOutlet">Add outlet</h2>
          <form id="add-form">
            <label for="add-code" data-t="code">Code printed on the outlet</label>
            <input id="add-code" name="code" required maxlength="100" pattern="[A-Za-z0-9_\-]{1,64}(:[A-Za-z0-9 \-]{12,20})?" autocomplete="off" autocapitalize="off" spellcheck="false">
            <label for="add-key" data-t="claimKey">Claim key on the label (XXXX-XXXX-XXXX)</label>
            <input id="add-key" name="claim_key" maxlength="20" pattern="[A-Za-z0-9 \-]{12,20}" autocomplete="off" autocapitalize="characters" spellcheck="false" placeholder="K7QF-3MZP-X2CD">
            <label for="add-name" data-t="name">Name</label>
            <input id="add-name" name="name" required maxlength="100">
            <label for="add-description" data-t="description">Description</label>
            <input id="add-description" name="description" maxlength="500">
            <p class="error" id="add-error" role="alert"></p>
            <div class="buttons">
              <button type="submit" id="add-save" data-t="save">Save</button>
              <button type="button" id="add-cancel" data-t="cancel">Cancel</button>
            </div>
          </form>
        </section>
        <section id="screen-detail" hidden>
          <h2 id="detail-name"></h2>
          <p class="muted"><span data-t="codeShort">Code</span>: <span id="detail-code"></span>
            · <span id="detail-online"></span></p>
          <p class="muted" id="detail-description"></p>
          <dl class="figures">
            <div><dt data-t="power">Power now</dt><dd id="detail-power">–</dd></div>
            <div><dt data-t="average">Average today</dt><dd id="detail-average">–</dd></div>
            <div><dt data-t="peak">Peak today</dt><dd id="detail-peak">–</dd></div>
            <div><dt data-t="energy">Energy today</dt><dd id="detail-energy">–</dd></div>
            <div><dt data-t="costToday">Cost today</dt><dd id="detail-cost">–</dd></div>
            <div><dt data-t="costMonth">This month so far</dt><dd id="detail-month">–</dd></div>
            <div><dt data-t="costProjected">Projected this month</dt><dd id="detail-projected">–</dd></div>
            <div><dt data-t="standby">Standby</dt><dd id="detail-standby">–</dd></div>
          </dl>
          <p><span data-t="state">State</span>: <strong id="detail-state">–</strong></p>
          <div class="buttons">
            <button type="button" id="switch-on" data-t="turnOn">Turn on</button>
            <button type="button" id="switch-off" data-t="turnOff">Turn off</button>
          </div>
          <p id="switch-status" role="status" aria-live="polite"></p>
          \#(automationsHTML)
          <div class="buttons">
            <button type="button" id="open-chart" data-t="chart">Chart</button>
            <button type="button" id="detail-edit" data-t="edit">Edit</button>
            <button type="button" id="detail-back" data-t="back">Back</button>
            <button type="button" id="detail-release" data-t="release">Remove from my outlets</button>
          </div>
        </section>
        <section id="screen-edit" hidden>
          <h2 data-t="edit">Edit</h2>
          <form id="edit-form">
            <label for="edit-name" data-t="name">Name</label>
            <input id="edit-name" name="name" required maxlength="100">
            <label for="edit-description" data-t="description">Description</label>
            <input id="edit-description" name="description" maxlength="500">
            <p class="error" id="edit-error" role="alert"></p>
            <div class="buttons">
              <button type="submit" id="edit-save" data-t="save">Save</button>
              <button type="button" id="edit-cancel" data-t="cancel">Cancel</button>
            </div>
          </form>
        </section>
        <section id="screen-chart" hidden>
          <h2><span data-t="chartTitle">Power by hour</span> – <span id="chart-name"></span></h2>
          <label for="chart-date" data-t="day">Day</label>
          <input type="date" id="chart-date">
          <p class="muted" id="chart-zone"></p>
          <div id="chart-box"></div>
          <p class="muted" id="chart-summary" aria-live="polite"></p>
          <button type="button" id="chart-back" data-t="back">Back</button>
        </section>
        </main>
        </body>
        </html>
        """#
}
