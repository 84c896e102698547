// Package docs holds the checks of the repository's Markdown files: they
// describe the product as it is and refer only to files inside the
// repository (see docs_test.go). It has no code of its own.
package docs
