// Mailroom dashboard: the copy buttons, and nothing else. Every page works
// without this file; the buttons stay hidden until it runs.
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
});
