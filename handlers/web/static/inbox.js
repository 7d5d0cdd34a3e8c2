// aye inbox: live updates. The page works without this script; with it, any change to an ask
// (the event stream /v1/events, same origin, the session cookie) refreshes the list in place,
// keeping whatever a person is typing or has picked in an ask that is still open; an ask that
// closes elsewhere while someone types into it shows closed, with what they typed kept and a
// notice saying who answered. It also asks before a destructive answer goes, keeps the title's
// count of open asks true, and (with the person's permission) notifies of a new ask with only
// "aye: an ask is waiting", never the question.
(function () {
  "use strict";

  var EVENTS = ["ask.created", "ask.answered", "ask.expired", "ask.withdrawn", "ask.escalated"];
  var SETTLE_MS = 100;    // events in a burst cause one refresh
  var NOTICE = "aye: an ask is waiting";   // all a notification says: never the question
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

  // An ask item a person is busy with: focus inside it, any input changed from its default,
  // or a form shown again after its answer was refused, with what they typed (data-typed).
  function busy(item) {
    if (item.hasAttribute("data-typed")) return true;
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

  // What a person typed into an item: [label, text] for each text field changed (never a
  // password field: a sensitive answer is not shown again in clear).
  function typed(item) {
    var found = [];
    var fields = item.querySelectorAll("textarea, input");
    for (var i = 0; i < fields.length; i++) {
      var field = fields[i];
      if (/^(hidden|checkbox|radio|password|submit|button)$/.test(field.type)) continue;
      if (field.readOnly || !field.value) continue;
      if (field.value === field.defaultValue && !item.hasAttribute("data-typed")) continue;
      var label = field.labels && field.labels[0] ? field.labels[0].textContent.trim() : field.name;
      found.push([label, field.value]);
    }
    return found;
  }

  // An item closed elsewhere while someone was busy with it: show it closed (`fresh`), with a
  // notice of how it ended and what they had typed, in read-only boxes they can copy from.
  function keep(old, fresh) {
    var texts = typed(old);
    var ending = fresh.querySelector(".ending");
    var how = ending ? ending.textContent.trim() : "it is no longer open";
    var box = document.createElement("div");
    box.className = "kept";
    box.setAttribute("role", "status");
    var said = document.createElement("p");
    said.textContent = (fresh.classList.contains("is-answered") ? "Answered elsewhere: " : "Closed elsewhere: ") +
      how + "." + (texts.length ? " What you typed is kept below." : "");
    box.appendChild(said);
    texts.forEach(function (pair, n) {
      var id = "kept-" + fresh.getAttribute("data-ref") + "-" + n;
      var label = document.createElement("label");
      label.setAttribute("for", id);
      label.textContent = "What you typed: " + pair[0];
      var area = document.createElement("textarea");
      area.id = id;
      area.readOnly = true;
      area.value = pair[1];
      box.appendChild(label);
      box.appendChild(area);
    });
    (fresh.querySelector("article") || fresh).appendChild(box);
    old.parentNode.replaceChild(fresh, old);
  }

  // A busy item no longer in the list (the Open tab drops a closed ask): a search of every
  // ask for its ref shows it as the list does, closed.
  function keepGone(old) {
    var ref = old.getAttribute("data-ref");
    fetch("/inbox?status=all&fragment=1&q=" + encodeURIComponent(ref), { credentials: "same-origin", cache: "no-store" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (!html || !old.parentNode) return;
        var holder = document.createElement("template");
        holder.innerHTML = html;
        var fresh = holder.content.querySelector('li[data-ref="' + ref + '"]');
        if (fresh) keep(old, fresh);
      })
      .catch(function () { /* the next refresh tries again */ });
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
      if (news[ref]) return;
      if (olds[ref].querySelector(".kept")) return;        // already shown closed, text kept
      if (busy(olds[ref]) && olds[ref].classList.contains("is-open")) keepGone(olds[ref]);
      else oldList.removeChild(olds[ref]);
    });
    var previous = null;
    Array.prototype.slice.call(newList.children).forEach(function (fresh) {
      var ref = fresh.getAttribute("data-ref");
      var old = olds[ref] && olds[ref].parentNode === oldList ? olds[ref] : null;
      if (old && (old.querySelector(".kept") || (fresh.classList.contains("is-open") && busy(old)))) {
        previous = old;
        return;
      }
      // An ask closed elsewhere is shown closed even mid-typing (it can no longer be answered),
      // with what was typed kept beside a notice.
      if (old && old.classList.contains("is-open") && busy(old)) {
        keep(old, fresh);
        previous = fresh;
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

  // The disclosures a person opened (a receipt), by id: a refresh redraws them closed.
  function opened(root) {
    var found = [];
    var open = root.querySelectorAll("details[open][id]");
    for (var i = 0; i < open.length; i++) found.push(open[i].id);
    return found;
  }

  function reopen(ids) {
    ids.forEach(function (id) {
      var again = document.getElementById(id);
      if (again && again.tagName === "DETAILS") again.open = true;
    });
  }

  function merge(fresh) {
    var current = region();
    if (!current || !fresh) return;
    var open = opened(current);
    mergeRegion(current, fresh);
    reopen(open);
  }

  function mergeRegion(current, fresh) {
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
        var fresh = holder.content.getElementById("live");
        if (fresh && fresh.getAttribute("data-title")) document.title = fresh.getAttribute("data-title");
        merge(fresh);
        localTimes(region());
        notifyNew();
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

  // -- a destructive answer asks first -------------------------------------------------------

  function confirming(event) {
    var form = event.target;
    var old = form.querySelector('input[name="confirmed"]');
    if (old) old.parentNode.removeChild(old);
    var button = event.submitter;
    if (!button || !button.getAttribute("data-confirm")) return;
    if (!window.confirm(button.getAttribute("data-confirm"))) {
      event.preventDefault();
      return;
    }
    var yes = document.createElement("input");
    yes.type = "hidden";
    yes.name = "confirmed";
    yes.value = "1";
    form.appendChild(yes);
  }

  // -- notifications, with the person's permission -------------------------------------------

  var known = null;   // the open asks seen so far (refs)

  function openRefs() {
    var found = {};
    var list = region() ? region().querySelector("ol.asks:not(.single)") : null;
    if (!list) return null;
    var open = list.querySelectorAll("li.is-open[data-ref]");
    for (var i = 0; i < open.length; i++) found[open[i].getAttribute("data-ref")] = true;
    return found;
  }

  function notifyNew() {
    var now = openRefs();
    if (now === null) return;
    var arrived = known !== null && Object.keys(now).some(function (ref) { return !known[ref]; });
    known = now;
    if (arrived && window.Notification && Notification.permission === "granted") {
      try { new Notification(NOTICE); } catch (e) { /* a browser that only notifies from a worker */ }
    }
  }

  function offerNotifications() {
    var offer = document.querySelector(".notify-offer");
    var button = document.getElementById("notify");
    if (!offer || !button || !window.Notification || Notification.permission !== "default") return;
    offer.hidden = false;
    button.addEventListener("click", function () {
      Notification.requestPermission().then(function () { offer.hidden = true; });
    });
  }

  function start() {
    document.addEventListener("submit", confirming);
    offerNotifications();
    known = openRefs();
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
