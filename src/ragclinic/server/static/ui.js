// The UI's own script (no inline script anywhere: the Content-Security-Policy allows script from this server
// only, and no eval). Waterfall bars take their size from data attributes; the upload form shows its progress;
// a passage page scrolls to the cited text.
(function () {
  "use strict";

  function sizeBars(root) {
    root.querySelectorAll(".bar[data-width]").forEach(function (bar) {
      bar.style.width = bar.dataset.width + "%"; // CSSOM, which the CSP allows (style attributes it does not)
      bar.style.marginLeft = bar.dataset.start + "%";
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    sizeBars(document);
    var cited = document.getElementById("cited");
    if (cited) cited.scrollIntoView({block: "center"});
  });

  document.addEventListener("htmx:afterSwap", function (e) { sizeBars(e.target); });

  document.addEventListener("htmx:xhr:progress", function (e) {
    var bar = document.getElementById("progress");
    if (bar && e.target.id === "upload" && e.detail.lengthComputable) {
      bar.value = e.detail.loaded / e.detail.total * 100;
    }
  });
})();
