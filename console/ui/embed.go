// Package ui holds the web console's browser files, served by package
// console at /kubegate/ui/.
package ui

import "embed"

// Static holds static/: index.html and the files it loads.
//
//go:embed static
var Static embed.FS
