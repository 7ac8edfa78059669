package api

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/api/messages"
	"github.com/oncegate/oncegate/api/openapi"
	"github.com/oncegate/oncegate/gateway"

	"github.com/oncegate/oncegate/status"
)

var update = flag.Bool("update", false, "rewrite the generated sections of docs/reference.md")

// referencePage is the page that holds the generated status and security
// event tables, from this package's folder.
var referencePage = filepath.Join("..", "docs", "reference.md")

// fullData fills every placeholder, so that every optional branch renders.
func fullData() messages.Data {
	return messages.Data{
		OperationID: "0123456789abcdef0123456789abcdef", Scope: "payments.transfer",
		PreviewTool: "payments_transfer_preview", ConfirmTool: "payments_transfer_confirm", PollWith: PollWith,
		PollAfterMS: 2000, PollAfterSeconds: "2", RetryAfterMS: 1000, RetryAfterSeconds: "1", RetryLimit: RetryLimit,
		RecentOperationID: "fedcba9876543210fedcba9876543210", ExpiresAt: "2030-01-01T00:00:00Z", TraceID: "t",
		State: "DONE", ResultRef: "tr_1", Reason: "insufficient_funds", Detail: "d", Method: "POST", Path: "/x",
	}
}

// Phrases by which a text tells the model to send the same request again.
var resendPhrases = map[messages.Lang]*regexp.Regexp{
	messages.English: regexp.MustCompile(`(?i)send exactly the same request|again with exactly the same params|same request again`),
	messages.Chinese: regexp.MustCompile(`原样重新发送同一个请求|用完全相同的参数再次调用|重新发送同一个请求`),
}

// boundPhrases are how a retryable text bounds the retries and hands over to the user.
var boundPhrases = map[messages.Lang][]string{
	messages.English: {fmt.Sprintf("at most %d times", RetryLimit), "tell the user"},
	messages.Chinese: {fmt.Sprintf("最多 %d 次", RetryLimit), "告诉用户"},
}

// TestMessagesAgreeWithRetryable checks the status registry against the
// contract's rule and the texts: retryable only for temporarily_unavailable
// and rate_limited;
// every text of every status in every language; a non-retryable text never
// tells the model to resend; a retryable one always bounds the retries and
// says what to tell the user after.
func TestMessagesAgreeWithRetryable(t *testing.T) {
	t.Parallel()
	msgs, err := messages.Load()
	require.NoError(t, err)
	used := map[string]bool{}
	for _, st := range status.All() {
		info, _ := status.Lookup(st)
		assert.Equal(t, st == status.TemporarilyUnavailable || st == status.RateLimited, info.Retryable,
			"%s: retryable is true only for temporarily_unavailable and rate_limited", st)
		for _, key := range messageKeys(st) {
			used[key] = true
			en := map[string]string{}
			for _, lang := range messages.Langs {
				m, i, err := msgs.Render(lang, key, fullData())
				require.NoError(t, err, "%s/%s", lang, key)
				if lang == messages.English {
					en["m"], en["i"] = m, i
				} else {
					assert.True(t, hasHan(m) && hasHan(i), "%s/%s is not in Chinese", lang, key)
					assert.NotEqual(t, en["m"], m, "%s/%s", lang, key)
				}
				if !info.Retryable {
					assert.False(t, resendPhrases[lang].MatchString(i), "%s/%s is not retryable but tells to resend: %q", lang, key, i)
					continue
				}
				assert.True(t, resendPhrases[lang].MatchString(i), "%s/%s is retryable but does not say to resend: %q", lang, key, i)
				for _, p := range boundPhrases[lang] {
					assert.Contains(t, i, p, "%s/%s must bound the retries and say what to tell the user", lang, key)
				}
			}
		}
	}
	// Every text belongs to a status or is a fragment.
	for _, lang := range messages.Langs {
		for _, key := range msgs.Keys(lang) {
			if strings.HasPrefix(key, messages.FragmentPrefix) {
				text, err := msgs.Fragment(lang, key, fullData())
				require.NoError(t, err, "%s/%s", lang, key)
				if lang == messages.Chinese {
					assert.True(t, hasHan(text), "%s/%s is not in Chinese: %q", lang, key, text)
				}
				continue
			}
			assert.True(t, used[key], "%s/%s renders no status of the registry", lang, key)
		}
	}
}

// TestEveryDetailKeyHasTexts finds every "detail.*" key the code uses and
// checks that each language has its fragment, so no English fragment is
// embedded in a Chinese answer.
func TestEveryDetailKeyHasTexts(t *testing.T) {
	t.Parallel()
	msgs, err := messages.Load()
	require.NoError(t, err)
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	re := regexp.MustCompile(`"(detail\.[a-z_]+)"`)
	found := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
			found++
			for _, lang := range messages.Langs {
				assert.Contains(t, msgs.Keys(lang), m[1], "%s uses %s, missing in %s.yaml", f, m[1], lang)
			}
		}
	}
	assert.Greater(t, found, 10, "the scan found the detail keys")
}

func hasHan(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(unicode.Han, r) })
}

// statusTable renders the reference's status table from the registry, by
// HTTP code then name.
func statusTable() string {
	names := status.All()
	slices.SortStableFunc(names, func(a, b status.Status) int { return cmp.Compare(codeOf(a), codeOf(b)) })
	var b strings.Builder
	b.WriteString("| status | HTTP | retryable | also carries | when |\n| --- | --- | --- | --- | --- |\n")
	for _, name := range names {
		info, _ := status.Lookup(name)
		retry := "no"
		if info.Retryable {
			retry = "yes"
		}
		fmt.Fprintf(&b, "| `%s` | %d | %s | %s | %s |\n", name, info.Code, retry, info.Carries, info.When)
	}
	return b.String()
}

// codeOf is the HTTP code of s.
func codeOf(s status.Status) int {
	info, _ := status.Lookup(s)
	return info.Code
}

// securityEventTable renders the reference's list of security events.
func securityEventTable() string {
	var b strings.Builder
	b.WriteString("| kind | answer | when |\n| --- | --- | --- |\n")
	for _, k := range gateway.SecurityEventKinds {
		fmt.Fprintf(&b, "| `%s` | `%s` %d | %s |\n", k.Kind, k.Status, codeOf(k.Status), k.When)
	}
	return b.String()
}

// checkGenerated compares docs/reference.md's section between the markers
// <!-- name:begin --> and <!-- name:end --> with want, rewriting it with -update.
func checkGenerated(t *testing.T, name, want string) {
	t.Helper()
	raw, err := os.ReadFile(referencePage)
	require.NoError(t, err)
	page := string(raw)
	begin, end := "<!-- "+name+":begin", "<!-- "+name+":end -->"
	i, j := strings.Index(page, begin), strings.Index(page, end)
	require.Truef(t, i >= 0 && j > i, "docs/reference.md has no %s ... %s section", begin, end)
	i += strings.Index(page[i:], "-->") + len("-->\n")
	if *update {
		page = page[:i] + want + page[j:]
		require.NoError(t, os.WriteFile(referencePage, []byte(page), 0o644))
		return
	}
	assert.Equalf(t, want, page[i:j], "docs/reference.md's %s section is stale: run go test ./api -run TestDocs -update", name)
}

// TestDocsStatusTable keeps the reference's status table equal to the registry.
func TestDocsStatusTable(t *testing.T) {
	checkGenerated(t, "statuses", statusTable())
}

// TestDocsSecurityEvents keeps the reference's security events equal to
// SecurityEventKinds.
func TestDocsSecurityEvents(t *testing.T) {
	checkGenerated(t, "security-events", securityEventTable())
}

// TestOpenAPIStatusEnumIsTheRegistry checks that the OpenAPI document's
// Answer.status enum lists exactly the registry's statuses.
func TestOpenAPIStatusEnumIsTheRegistry(t *testing.T) {
	t.Parallel()
	doc, err := openapi.Load(context.Background())
	require.NoError(t, err)
	var enum []status.Status
	for _, v := range doc.Components.Schemas["Answer"].Value.Properties["status"].Value.Enum {
		enum = append(enum, status.Status(v.(string)))
	}
	slices.Sort(enum)
	assert.Equal(t, status.All(), enum)
}

// TestEveryDetailOfTheServiceHasItsText checks that each detail fragment
// the service's answers name (a quote's failure, an approval's reason, an
// engine or store outage) has a text in every language: the agent is told
// what went wrong, not only that it did.
func TestEveryDetailOfTheServiceHasItsText(t *testing.T) {
	t.Parallel()
	msgs, err := messages.Load()
	require.NoError(t, err)
	keys := gateway.DetailKeys()
	require.GreaterOrEqual(t, len(keys), 11, "the quote failures, the approval reasons, the outages")
	for _, key := range keys {
		for _, lang := range messages.Langs {
			text, err := msgs.Fragment(lang, key, fullData())
			require.NoError(t, err, "%s/%s", lang, key)
			assert.NotEmpty(t, text)
		}
	}
}
