// Package ui holds the web console's browser files, served by package
// console at /kubegate/ui/ (docs/kubernetes-behaviour.md, K): plain
// HTML, CSS and JavaScript modules, with no build step and nothing
// fetched from another origin.
package ui

import "embed"

// Static holds static/: index.html and the files it loads (app.css and
// the JavaScript modules app.js, api.js, dom.js, pki.js, requests.js,
// scheduling.js and cluster.js).
//
//go:embed static
var Static embed.FS
