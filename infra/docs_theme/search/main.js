// Search that works from disk (file://) as well as from a server; replaces MkDocs' search/main.js.
//
// MkDocs' own script fetches search/search_index.json from a web worker, which a page opened
// from disk may not do (no worker, no fetch of a file:// URL). Here the index is a script,
// search/search_index.js (written by infra/docs_hooks.py: `window.REARVIEW_SEARCH_INDEX = {...}`),
// loaded with a <script> tag like lunr.js, and lunr runs in the page. Only the search page
// (search.html, where every page's search box sends its query as ?q=) loads them.
(function () {
  "use strict";

  var results = document.getElementById("mkdocs-search-results");
  if (!results) {
    return;
  }
  var input = document.getElementById("mkdocs-search-query");
  var minLength = 3;
  var index = null;
  var documents = {};

  function joinUrl(base, path) {
    if (path.charAt(0) === "/") {
      return path;
    }
    return base.charAt(base.length - 1) === "/" ? base + path : base + "/" + path;
  }

  function escapeHtml(value) {
    return value
      .replace(/&/g, "&amp;")
      .replace(/"/g, "&quot;")
      .replace(/</g, "&lt;")
      .replace(/>/g, "&gt;");
  }

  function queryFromLocation() {
    var params = window.location.search.substring(1).split("&");
    for (var i = 0; i < params.length; i++) {
      var pair = params[i].split("=");
      if (pair[0] === "q" && pair.length > 1) {
        return decodeURIComponent(pair[1].replace(/\+/g, "%20"));
      }
    }
    return "";
  }

  function say(text) {
    results.innerHTML = "<p>" + escapeHtml(text) + "</p>";
  }

  function show(found) {
    if (found.length === 0) {
      say(results.getAttribute("data-no-results-text") || "No results found");
      return;
    }
    var html = "";
    for (var i = 0; i < found.length; i++) {
      var doc = found[i];
      html +=
        '<article><h3><a href="' + joinUrl(base_url, doc.location) + '">' + escapeHtml(doc.title) +
        "</a></h3><p>" + escapeHtml(doc.text.substring(0, 200)) + "</p></article>";
    }
    results.innerHTML = html;
  }

  function lookUp(query) {
    try {
      return index.search(query);
    } catch (e) {
      // lunr's query syntax (field:, ~, ^, +, -) rejected the text: search its plain words instead
      return index.search(query.replace(/[:~^+\-*]/g, " "));
    }
  }

  function search() {
    var query = input.value.trim();
    if (query.length < minLength) {
      say("Type at least " + minLength + " characters.");
      return;
    }
    var found = [];
    var hits = lookUp(query);
    for (var i = 0; i < hits.length; i++) {
      if (documents[hits[i].ref]) {
        found.push(documents[hits[i].ref]);
      }
    }
    show(found);
  }

  function ready() {
    var data = window.REARVIEW_SEARCH_INDEX;
    if (data.config && data.config.separator) {
      lunr.tokenizer.separator = new RegExp(data.config.separator);
    }
    if (data.config && data.config.min_search_length) {
      minLength = data.config.min_search_length;
    }
    index = lunr(function () {
      this.field("title");
      this.field("text");
      this.ref("location");
      for (var i = 0; i < data.docs.length; i++) {
        this.add(data.docs[i]);
        documents[data.docs[i].location] = data.docs[i];
      }
    });
    input.addEventListener("keyup", search);
    input.value = queryFromLocation();
    if (input.value) {
      search();
    } else {
      say("Type what you are looking for.");
    }
  }

  function load(path, then) {
    var script = document.createElement("script");
    script.src = joinUrl(base_url, path);
    script.onload = then;
    script.onerror = function () {
      say("Search could not load " + path + ": build the site again with `make docs`.");
    };
    document.head.appendChild(script);
  }

  load("search/lunr.js", function () {
    load("search/search_index.js", ready);
  });
})();
