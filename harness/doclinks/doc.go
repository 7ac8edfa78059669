// Package doclinks checks the documentation a stranger reads: every
// relative link of README.md and docs/*.md names a file that exists and,
// for a Markdown page, a heading that page has (by GitHub's anchor rule).
// It holds only its test; nothing imports it.
package doclinks
