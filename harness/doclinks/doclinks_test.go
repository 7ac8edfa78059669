package doclinks

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// markdown parses the pages as CommonMark; the links in the rows of a GFM
// table are read as a paragraph's, which they are for this check.
var markdown = goldmark.New()

// page is what one Markdown file offers and asks: the anchors of its
// headings and the destinations of its links and images.
type page struct {
	anchors map[string]bool
	links   []string
}

// slug is GitHub's anchor of a heading's text: lower case, every character
// but letters, digits, marks, '-' and '_' dropped, each space a '-'.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// plainText is the text of n's inline content as GitHub reads it for an
// anchor: the words of text, code spans, emphasis and link texts.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Value(src))
			if c.SoftLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(c.Value)
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// parse reads one Markdown file: its headings' anchors (a repeated one gets
// -1, -2, ... as on GitHub) and its links' destinations.
func parse(path string) (page, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return page{}, err
	}
	p := page{anchors: map[string]bool{}}
	seen := map[string]int{}
	doc := markdown.Parser().Parse(text.NewReader(src))
	err = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			base := slug(plainText(n, src))
			anchor := base
			if k := seen[base]; k > 0 {
				anchor = fmt.Sprintf("%s-%d", base, k)
			}
			seen[base]++
			p.anchors[anchor] = true
		case *ast.Link:
			p.links = append(p.links, string(n.Destination))
		case *ast.Image:
			p.links = append(p.links, string(n.Destination))
		}
		return ast.WalkContinue, nil
	})
	return p, err
}

// problems checks every relative link of the pages (paths relative to
// root) and returns one line per link that does not resolve: a file that
// does not exist, or an anchor its Markdown page does not have.
func problems(root string, pages []string) ([]string, error) {
	parsed := map[string]page{}
	load := func(path string) (page, error) {
		if p, ok := parsed[path]; ok {
			return p, nil
		}
		p, err := parse(path)
		if err == nil {
			parsed[path] = p
		}
		return p, err
	}
	var out []string
	for _, rel := range pages {
		from := filepath.Join(root, rel)
		p, err := load(from)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", rel, err)
		}
		for _, dest := range p.links {
			u, err := url.Parse(dest)
			if err != nil {
				out = append(out, fmt.Sprintf("%s: link %q does not parse: %v", rel, dest, err))
				continue
			}
			if u.Scheme != "" || u.Host != "" {
				continue // an absolute URL: not this repository's to check
			}
			target := from
			if u.Path != "" {
				target = filepath.Join(filepath.Dir(from), filepath.FromSlash(u.Path))
				if _, err := os.Stat(target); err != nil {
					out = append(out, fmt.Sprintf("%s: link %q names a file that does not exist", rel, dest))
					continue
				}
			}
			if u.Fragment == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			tp, err := load(target)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", target, err)
			}
			if !tp.anchors[u.Fragment] {
				out = append(out, fmt.Sprintf("%s: link %q names no heading of %s", rel, dest, filepath.Base(target)))
			}
		}
	}
	return out, nil
}

// docPages are README.md and every page of docs/, relative to root.
func docPages(t *testing.T, root string) []string {
	t.Helper()
	pages := []string{"README.md"}
	found, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, found, "docs/ has pages")
	for _, path := range found {
		rel, err := filepath.Rel(root, path)
		require.NoError(t, err)
		pages = append(pages, rel)
	}
	return pages
}

// TestLinksResolve: every relative link of README.md and docs/*.md names
// a file of the repository, and a heading of it when it names one.
func TestLinksResolve(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(root, "go.mod"), "the repository's root")
	pages := docPages(t, root)
	found, err := problems(root, pages)
	require.NoError(t, err)
	assert.Empty(t, found, "links that do not resolve")

	// The pages link each other: a check that finds no link checks nothing.
	var links int
	for _, rel := range pages {
		p, err := parse(filepath.Join(root, rel))
		require.NoError(t, err)
		links += len(p.links)
	}
	assert.Greater(t, links, 50, "the pages' links")
}

// TestProblemsFindsEveryBrokenLink runs the check on pages made for it:
// each broken kind of link is reported once, and nothing else is.
func TestProblemsFindsEveryBrokenLink(t *testing.T) {
	root := t.TempDir()
	write := func(rel, body string) {
		path := filepath.Join(root, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	}
	write("README.md", "# Title\n\n"+
		"[ok](docs/a.md) [ok](docs/a.md#which-stack-make-up-acts-on) [ok](#title) "+
		"[ok](https://example.com/x#y) [ok](docs/) ![ok](docs/chart.png)\n\n"+
		"[bad file](docs/missing.md) [bad anchor](docs/a.md#nope) [bad self](#nope)\n")
	write("docs/a.md", "# A\n\n## Which stack `make up` acts on\n\n## Notes\n\n## Notes\n\n"+
		"| col | link |\n| --- | --- |\n| x | [in a table](../README.md#missing) |\n\n"+
		"[ok](../README.md#title) [ok](#notes-1) [bad](#notes-2) ![bad image](b.png)\n")
	write("docs/chart.png", "png")

	found, err := problems(root, []string{"README.md", "docs/a.md"})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{
		`README.md: link "docs/missing.md" names a file that does not exist`,
		`README.md: link "docs/a.md#nope" names no heading of a.md`,
		`README.md: link "#nope" names no heading of README.md`,
		`docs/a.md: link "../README.md#missing" names no heading of README.md`,
		`docs/a.md: link "#notes-2" names no heading of a.md`,
		`docs/a.md: link "b.png" names a file that does not exist`,
	}, found)
}

// TestSlug: GitHub's anchors of headings these pages have.
func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Which stack make up acts on", "which-stack-make-up-acts-on"},
		{"1b. The production-like profile", "1b-the-production-like-profile"},
		{"4. HTTP API (agent-facing)", "4-http-api-agent-facing"},
		{"How to add …", "how-to-add-"},
		{"Put oncegate in front of an MCP server's tools", "put-oncegate-in-front-of-an-mcp-servers-tools"},
		{"Asynchronous downstreams: pending is not done", "asynchronous-downstreams-pending-is-not-done"},
		{"How a failure is known: failure_kind", "how-a-failure-is-known-failure_kind"},
		{"oncegate — the outer contract", "oncegate--the-outer-contract"},
		{"make soak PROFILE=prod: the production-like profile", "make-soak-profileprod-the-production-like-profile"},
		{"指纹 与 回执", "指纹-与-回执"},
	} {
		assert.Equal(t, tc.want, slug(tc.heading), tc.heading)
	}
	// The heading's text is read from its inline nodes: code spans count.
	dir := t.TempDir()
	path := filepath.Join(dir, "p.md")
	require.NoError(t, os.WriteFile(path, []byte("## Which stack `make up` acts on\n\n### *Emphasis* and [a link](x)\n"), 0o644))
	p, err := parse(path)
	require.NoError(t, err)
	anchors := make([]string, 0, len(p.anchors))
	for a := range p.anchors {
		anchors = append(anchors, a)
	}
	slices.Sort(anchors)
	assert.Equal(t, []string{"emphasis-and-a-link", "which-stack-make-up-acts-on"}, anchors)
}
