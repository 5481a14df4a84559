// Live pages (runs list, run page): show the socket's state, and keep live rows unique in the runs list.
(function () {
  "use strict";

  function setState(state, text) {
    document.querySelectorAll("[data-live-state]").forEach(function (element) {
      element.dataset.liveState = state;
      element.textContent = text;
    });
  }

  document.addEventListener("htmx:wsOpen", function () { setState("open", "live"); });
  document.addEventListener("htmx:wsClose", function (event) {
    // A socket closed because its element was swapped out (new filters) is replaced, not lost.
    if (document.body.contains(event.target)) { setState("closed", "disconnected, reconnecting…"); }
  });

  // New runs are inserted at the top of the list; a run the page already shows (rendered just before the socket
  // connected, or inserted earlier) is replaced where it is instead of appearing twice.
  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var target = event.detail.target;
    if (!target || target.id !== "runs-body") { return; }
    var empty = document.getElementById("runs-empty");
    if (empty) { empty.remove(); }
    Array.prototype.slice.call(event.detail.fragment.children).forEach(function (row) {
      var existing = row.id && document.getElementById(row.id);
      if (existing) {
        existing.replaceWith(row);
        htmx.process(row);
      } else {
        row.classList.add("fresh");
      }
    });
  });
})();
