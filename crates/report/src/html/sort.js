document.querySelectorAll("table.findings").forEach(function (table) {
  table.querySelectorAll("th[data-sort]").forEach(function (th, column) {
    th.title = "Sort";
    th.addEventListener("click", function () {
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var down = th.getAttribute("aria-sort") !== "ascending";
      var key = function (row) { return row.cells[column].getAttribute("data-key") || row.cells[column].textContent; };
      rows.sort(function (a, b) {
        var x = key(a), y = key(b), nx = parseFloat(x), ny = parseFloat(y);
        var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
        return down ? c : -c;
      });
      table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", down ? "ascending" : "descending");
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
