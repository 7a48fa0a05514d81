// Starts the vendored Swagger UI on /docs (docs.html). "Try it out" rides on the browser's session: it sends
// the page's CSRF token, which the server asks of every state-changing request a session authorises.
window.addEventListener("DOMContentLoaded", function () {
  "use strict";
  var meta = document.querySelector('meta[name="csrf-token"]');
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    requestInterceptor: function (req) {
      if (meta) req.headers["X-CSRF-Token"] = meta.content;
      return req;
    },
  });
});
