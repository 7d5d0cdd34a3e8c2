// aye inbox: live updates. The page works without this script; with it, any change to an ask
// (the event stream /v1/events, same origin, the session cookie) refreshes the list in place,
// keeping whatever a person is typing or has picked in an ask that is still open.
(function () {
  "use strict";

  var EVENTS = ["ask.created", "ask.answered", "ask.expired", "ask.withdrawn", "ask.escalated"];
  var SETTLE_MS = 100;    // events in a burst cause one refresh
  var EVERY_MS = 60000;   // and once a minute anyway: relative times stay true

  // The server's HTML of each item as shown: an item the server renders the same is left alone
  // (no flicker, no lost click); only a changed one is replaced.
  var shown = new WeakMap();
  var timer = null;
  var running = false;
  var again = false;

  function region() {
    return document.getElementById("live");
  }

  // An ask item a person is busy with: focus inside it, or any input changed from its default.
  function busy(item) {
    if (item.contains(document.activeElement) && document.activeElement !== document.body) {
      return true;
    }
    var inputs = item.querySelectorAll("input, textarea, select");
    for (var i = 0; i < inputs.length; i++) {
      var input = inputs[i];
      if (input.type === "hidden") continue;
      if (input.type === "checkbox" || input.type === "radio") {
        if (input.checked !== input.defaultChecked) return true;
      } else if (input.tagName === "SELECT") {
        for (var j = 0; j < input.options.length; j++) {
          if (input.options[j].selected !== input.options[j].defaultSelected) return true;
        }
      } else if (input.value !== input.defaultValue) {
        return true;
      }
    }
    return false;
  }

  function items(list) {
    var found = {};
    if (!list) return found;
    var children = list.children;
    for (var i = 0; i < children.length; i++) {
      var ref = children[i].getAttribute("data-ref");
      if (ref) found[ref] = children[i];
    }
    return found;
  }

  // Bring the old list to the new one's asks and order without moving an item being worked on
  // (moving a node would take its focus): asks keep their relative order (newest first).
  function mergeList(oldList, newList) {
    var olds = items(oldList);
    var news = items(newList);
    Object.keys(olds).forEach(function (ref) {
      if (!news[ref]) oldList.removeChild(olds[ref]);
    });
    var previous = null;
    Array.prototype.slice.call(newList.children).forEach(function (fresh) {
      var ref = fresh.getAttribute("data-ref");
      var old = olds[ref] && olds[ref].parentNode === oldList ? olds[ref] : null;
      // An ask closed elsewhere is shown closed even mid-typing: it can no longer be answered.
      if (old && fresh.classList.contains("is-open") && busy(old)) {
        previous = old;
        return;
      }
      var html = fresh.outerHTML;
      if (old && shown.get(old) === html) {
        previous = old;
        return;
      }
      shown.set(fresh, html);
      if (old) {
        oldList.replaceChild(fresh, old);
      } else {
        oldList.insertBefore(fresh, previous ? previous.nextSibling : oldList.firstChild);
      }
      previous = fresh;
    });
  }

  function merge(fresh) {
    var current = region();
    if (!current || !fresh) return;
    var oldList = current.querySelector("ol.asks");
    var newList = fresh.querySelector("ol.asks");
    if (!oldList || !newList) {
      current.replaceWith(fresh);
      remember(fresh);
      return;
    }
    mergeList(oldList, newList);
    // Everything else in the region (paging, history, the empty line) is replaced whole.
    Array.prototype.slice.call(current.children).forEach(function (child) {
      if (child !== oldList) current.removeChild(child);
    });
    var after = false;
    Array.prototype.slice.call(fresh.children).forEach(function (child) {
      if (child === newList) { after = true; return; }
      if (after) current.appendChild(child);
      else current.insertBefore(child, oldList);
    });
  }

  function refresh() {
    var current = region();
    if (!current) return;
    if (running) { again = true; return; }
    running = true;
    fetch(current.getAttribute("data-fragment"), { credentials: "same-origin", cache: "no-store" })
      .then(function (response) {
        if (response.redirected || response.status === 401 || response.status === 403) {
          window.location.assign("/login");   // the session ended
          return null;
        }
        return response.ok ? response.text() : null;
      })
      .then(function (html) {
        if (html === null || html === undefined) return;
        var holder = document.createElement("template");
        holder.innerHTML = html;
        merge(holder.content.getElementById("live"));
        localTimes(region());
      })
      .catch(function () { /* offline for a moment: the next event or minute tries again */ })
      .then(function () {
        running = false;
        if (again) { again = false; schedule(); }
      });
  }

  function schedule() {
    if (timer !== null) clearTimeout(timer);
    timer = setTimeout(function () { timer = null; refresh(); }, SETTLE_MS);
  }

  // The absolute time on hover in the reader's own time zone.
  function localTimes(root) {
    if (!root) return;
    var times = root.querySelectorAll("time[datetime]");
    for (var i = 0; i < times.length; i++) {
      var at = new Date(times[i].getAttribute("datetime"));
      if (!isNaN(at.getTime())) times[i].title = at.toLocaleString();
    }
  }

  function remember(root) {
    var list = root ? root.querySelector("ol.asks") : null;
    if (!list) return;
    for (var i = 0; i < list.children.length; i++) shown.set(list.children[i], list.children[i].outerHTML);
  }

  function start() {
    remember(region());
    localTimes(document);
    if (!region()) return;
    setInterval(schedule, EVERY_MS);
    if (!window.EventSource) return;
    var source = new EventSource("/v1/events");
    EVENTS.forEach(function (name) { source.addEventListener(name, schedule); });
    // (Re)connected: catch up on anything that changed while the page had no stream.
    source.addEventListener("open", schedule);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
