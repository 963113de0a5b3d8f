// actonce console: progressive enhancement only. Without this script every form works;
// with it, the chosen reason class is highlighted with its consequence, and the result
// reference is required exactly when the chosen class names a result.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("form[data-resolve]").forEach(function (form) {
    var ref = form.querySelector("input[name=result_ref]");
    function update() {
      form.querySelectorAll(".choice").forEach(function (choice) {
        var radio = choice.querySelector("input[type=radio]");
        choice.classList.toggle("chosen", radio.checked);
        if (radio.checked && ref) {
          ref.required = choice.dataset.needsRef === "yes";
        }
      });
    }
    form.addEventListener("change", update);
    update();
  });
});
