// The page's service worker, served at /sw.js (scope: the whole page). It only shows what outletd pushes (Web Push,
// docs/ALERT-CHANNELS.md): the payload is JSON {id, title, body, url, occurredAt, event}; a click opens `url` (or
// focuses a page already there). Nothing is cached and nothing else is fetched.
"use strict";

self.addEventListener("install", function () { self.skipWaiting(); });
self.addEventListener("activate", function (event) { event.waitUntil(self.clients.claim()); });

self.addEventListener("push", function (event) {
  var notice = {};
  if (event.data) {
    try { notice = event.data.json() || {}; } catch (error) { notice = { body: event.data.text() }; }
  }
  var url = typeof notice.url === "string" && notice.url ? notice.url : "/";
  event.waitUntil(self.registration.showNotification(notice.title || "outletd", {
    body: notice.body || "",
    tag: notice.id || undefined,
    timestamp: notice.occurredAt ? Date.parse(notice.occurredAt) || undefined : undefined,
    data: { url: url }
  }));
});

self.addEventListener("notificationclick", function (event) {
  event.notification.close();
  var target = new URL((event.notification.data && event.notification.data.url) || "/", self.location.origin).href;
  event.waitUntil(self.clients.matchAll({ type: "window", includeUncontrolled: true }).then(function (windows) {
    for (var i = 0; i < windows.length; i++) {
      if (windows[i].url === target && "focus" in windows[i]) return windows[i].focus();
    }
    return self.clients.openWindow(target);
  }));
});
