// Mailroom dashboard: the copy buttons, and the template editor's live
// preview. Every page works without this file: the copy buttons stay
// hidden until it runs, and the editor has its Preview button.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("button.copy[data-copy]").forEach(function (b) {
    b.hidden = false;
    b.addEventListener("click", function () {
      var text = b.getAttribute("data-copy");
      var done = function () {
        b.textContent = "Copied";
        setTimeout(function () { b.textContent = "Copy"; }, 1500);
      };
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(text).then(done, function () { b.textContent = "Select and copy"; });
      } else {
        b.textContent = "Select and copy";
      }
    });
  });
  // The live preview: a pause in typing submits the form through its
  // Preview button, into the preview's frame (the server renders it; the
  // frame is sandboxed). Nothing is saved.
  document.querySelectorAll("form[data-live-preview]").forEach(function (f) {
    var b = f.querySelector("button[formtarget]");
    if (!b || !f.requestSubmit) { return; }
    var timer;
    f.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () { f.requestSubmit(b); }, 400);
    });
  });
});
