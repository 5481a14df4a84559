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

  // A filter the list does not take answers 400 with the table saying which: show it (htmx swaps no 4xx itself).
  document.addEventListener("htmx:beforeSwap", function (event) {
    if (event.detail.xhr.status === 400 && event.detail.target && event.detail.target.id === "runs-table") {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });

  // New runs are inserted at the top of the list; a run the page already shows (rendered just before the socket
  // connected, or inserted earlier) is replaced where it is instead of appearing twice.
  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var target = event.detail.target;
    if (!target || target.id !== "runs-body") { return; }
    var empty = document.getElementById("runs-empty");
    if (empty) { empty.remove(); }
    var added = 0;
    Array.prototype.slice.call(event.detail.fragment.children).forEach(function (row) {
      var existing = row.id && document.getElementById(row.id);
      if (existing) {
        existing.replaceWith(row);
        htmx.process(row);
      } else {
        row.classList.add("fresh");
        added += 1;
      }
    });
    // The pager's count follows: a run inserted live is one more run matching the filters.
    var count = document.getElementById("runs-count");
    if (count && added) {
      var total = parseInt(count.dataset.count, 10) + added;
      count.dataset.count = String(total);
      count.textContent = total + (total === 1 ? " run" : " runs");
    }
  });
})();
