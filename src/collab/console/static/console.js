// collab console: progressive enhancement only (every page works without it). No inline script: CSP default-src 'self'.
(function () {
  "use strict";
  // Copy buttons: <button data-copy="element-id">; says what happened in the polite status region.
  function announce(text) {
    var region = document.querySelector(".flash[role=status]");
    if (region) { region.classList.remove("empty"); region.textContent = text; }
  }
  document.addEventListener("click", function (event) {
    var copy = event.target.closest("[data-copy]");
    if (copy) {
      event.preventDefault();
      var source = document.getElementById(copy.getAttribute("data-copy"));
      if (!source) { return; }
      var text = source.value !== undefined ? source.value : source.textContent;
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(text.trim()).then(function () { announce("Copied to the clipboard."); },
          function () { announce("Copy failed: select the text and copy it yourself."); });
      } else {
        announce("Copy is not available here: select the text and copy it yourself.");
      }
      return;
    }
  });
  // Confirm dialogs: a submit button with data-confirm="question" asks before its form is sent.
  document.addEventListener("submit", function (event) {
    var button = event.submitter;
    var question = button && button.getAttribute("data-confirm");
    if (question && !window.confirm(question)) { event.preventDefault(); }
  });
})();
