// The console's own behaviour, kept out of the pages so that the Content-Security-Policy can
// forbid inline script: local dates, copy buttons, confirmations of destructive actions, files
// read into text areas, and files sent as they are.
(function () {
  "use strict";

  // <time datetime="...Z"> in the reader's time zone; the UTC instant stays on hover.
  function localTimes(root) {
    var format = new Intl.DateTimeFormat(undefined, {
      year: "numeric", month: "short", day: "2-digit",
      hour: "2-digit", minute: "2-digit", second: "2-digit"
    });
    root.querySelectorAll("time[datetime][data-local]").forEach(function (el) {
      var at = new Date(el.getAttribute("datetime"));
      if (isNaN(at.getTime())) { return; }
      el.title = el.getAttribute("datetime").replace("T", " ").replace(/\.\d+/, "") + " UTC";
      el.textContent = format.format(at);
      el.removeAttribute("data-local");
    });
  }

  function copyButtons(root) {
    root.querySelectorAll("button[data-copy]").forEach(function (button) {
      if (button.dataset.bound) { return; }
      button.dataset.bound = "1";
      button.addEventListener("click", function () {
        var source = document.getElementById(button.getAttribute("data-copy"));
        if (!source) { return; }
        var text = source.textContent.trim();
        var done = function () { button.textContent = "Copied"; };
        if (navigator.clipboard && window.isSecureContext) {
          navigator.clipboard.writeText(text).then(done, function () { select(source); });
        } else {
          select(source);
        }
      });
    });
  }

  // Where the clipboard is not offered (plain HTTP), the text is selected for Ctrl+C.
  function select(el) {
    var range = document.createRange();
    range.selectNodeContents(el);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  // A form with data-confirm asks before it is sent.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var question = form.getAttribute && form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) {
      event.preventDefault();
      event.stopImmediatePropagation();
    }
  }, true);

  // A button with data-confirm-click asks before its form is sent by it.
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button[data-confirm-click]");
    if (button && !window.confirm(button.getAttribute("data-confirm-click"))) {
      event.preventDefault();
    }
  }, true);

  // <input type="file" data-into="id">: the chosen file's text goes into that text area.
  function fileReaders(root) {
    root.querySelectorAll("input[type=file][data-into]").forEach(function (input) {
      if (input.dataset.bound) { return; }
      input.dataset.bound = "1";
      input.addEventListener("change", function () {
        var target = document.getElementById(input.getAttribute("data-into"));
        var file = input.files && input.files[0];
        if (!target || !file) { return; }
        file.text().then(function (text) { target.value = text; });
      });
    });
  }

  // <form data-upload="id">: its file is sent as it is (the body, named in the query) with the
  // page's CSRF token, and the answer replaces the element `id`.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var target = form.getAttribute && form.getAttribute("data-upload");
    if (!target || event.defaultPrevented) { return; }
    event.preventDefault();
    var input = form.querySelector("input[type=file]");
    var file = input && input.files && input.files[0];
    if (!file) { return; }
    var headers = JSON.parse(document.body.getAttribute("hx-headers") || "{}");
    var url = form.getAttribute("action") + "?name=" + encodeURIComponent(file.name);
    fetch(url, { method: "POST", body: file, headers: headers, credentials: "same-origin" })
      .then(function (answer) { return answer.text(); })
      .then(function (html) {
        var old = document.getElementById(target);
        if (!old) { return; }
        var holder = document.createElement("div");
        holder.innerHTML = html;
        var fresh = holder.querySelector("#" + target) || holder;
        old.replaceWith(fresh);
        enhance(fresh);
      });
  });

  function enhance(root) {
    localTimes(root);
    copyButtons(root);
    fileReaders(root);
  }

  document.addEventListener("DOMContentLoaded", function () { enhance(document); });
  document.addEventListener("htmx:afterSettle", function (event) { enhance(event.target); });
})();
