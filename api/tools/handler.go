package tools

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/oncegate/oncegate/api/messages"
	"github.com/oncegate/oncegate/internal/catalog"
)

// ErrUnknownFormat is returned by Definitions for a format other than
// FormatOpenAI and FormatAnthropic.
var ErrUnknownFormat = errors.New("unknown tool format")

// answer is the gateway's answer shape for an error of GET /v1/tools.
type answer struct {
	Status      string `json:"status"`
	Meaning     string `json:"meaning"`
	Instruction string `json:"instruction"`
	Retryable   bool   `json:"retryable"`
	TraceID     string `json:"trace_id"`
}

// strictKey is the bodies key of the OpenAI strict-mode definitions.
const strictKey = FormatOpenAI + "+strict"

// Handler serves GET /v1/tools?format=openai|anthropic (default openai)
// and GET /v1/tools?format=openai&strict=true: the JSON array of tool
// definitions, ready to pass to the vendor's API as its `tools`. An unknown
// format, a strict value other than true or false, or strict=true with
// another format than openai is a 400 invalid_request answer. The
// definitions are built once, the catalog being immutable.
func Handler(cat *catalog.Catalog) http.HandlerFunc {
	bodies := make(map[string][]byte, 3)
	var buildErr error
	for _, f := range []string{FormatOpenAI, FormatAnthropic, strictKey} {
		var defs any
		var err error
		if f == strictKey {
			defs, err = DefinitionsStrict(cat)
		} else {
			defs, err = Definitions(cat, f)
		}
		if err != nil {
			buildErr = err
			break
		}
		b, err := json.Marshal(defs)
		if err != nil {
			buildErr = err
			break
		}
		bodies[f] = b
	}
	return func(w http.ResponseWriter, r *http.Request) {
		zh := messages.ParseAcceptLanguage(r.Header.Get("Accept-Language")) == messages.Chinese
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeAnswer(w, r, http.StatusMethodNotAllowed, answer{
				Status:      "method_not_allowed",
				Meaning:     pick(zh, "This endpoint only answers GET.", "该端点只接受 GET 请求。"),
				Instruction: pick(zh, "Send GET /v1/tools?format=openai or ?format=anthropic.", "请发送 GET /v1/tools?format=openai 或 ?format=anthropic。"),
			})
			return
		}
		if buildErr != nil {
			writeAnswer(w, r, http.StatusInternalServerError, answer{
				Status:      "internal_error",
				Meaning:     pick(zh, "The gateway could not build its tool definitions from its catalog: "+buildErr.Error(), "网关无法根据其动作目录生成工具定义："+buildErr.Error()),
				Instruction: pick(zh, "Do not retry. Tell the operator that the action catalog must be fixed.", "不要重试。请告知运维人员需要修正动作目录。"),
			})
			return
		}
		format := r.URL.Query().Get("format")
		if format == "" {
			format = FormatOpenAI
		}
		strict, err := strconv.ParseBool(r.URL.Query().Get("strict"))
		if r.URL.Query().Get("strict") == "" {
			strict, err = false, nil
		}
		if err != nil || (strict && format != FormatOpenAI) {
			writeAnswer(w, r, http.StatusBadRequest, answer{
				Status: "invalid_request",
				Meaning: pick(zh, "strict must be true or false, and strict=true exists for format=openai only (OpenAI's strict mode).",
					"strict 只能是 true 或 false，且 strict=true 只适用于 format=openai（OpenAI 的严格模式）。"),
				Instruction: pick(zh, "Do not retry unchanged. Ask for ?format=openai&strict=true, or leave strict out.",
					"不要原样重试。请使用 ?format=openai&strict=true，或省略 strict。"),
			})
			return
		}
		key := format
		if strict {
			key = strictKey
		}
		body, ok := bodies[key]
		if !ok {
			writeAnswer(w, r, http.StatusBadRequest, answer{
				Status: "invalid_request",
				Meaning: pick(zh, "The format "+quote(format)+" is not supported; the supported formats are openai and anthropic.",
					"不支持格式 "+quote(format)+"；支持的格式为 openai 和 anthropic。"),
				Instruction: pick(zh, "Do not retry unchanged. Ask again with ?format=openai or ?format=anthropic, or without format for openai.",
					"不要原样重试。请使用 ?format=openai 或 ?format=anthropic 重新请求，省略 format 时为 openai。"),
			})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(body)
		}
	}
}

// writeAnswer writes a as JSON with status code, filling the trace id.
func writeAnswer(w http.ResponseWriter, r *http.Request, code int, a answer) {
	a.TraceID = TraceID(w, r)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(a)
}

// TraceID returns the trace id of an answer to r written to w: the
// X-Trace-Id the gateway's trace middleware already set on the response,
// else the trace id of a valid W3C traceparent header, else the
// X-Request-Id header, else a fresh random one. w may be nil.
func TraceID(w http.ResponseWriter, r *http.Request) string {
	if w != nil {
		if id := w.Header().Get("X-Trace-Id"); id != "" {
			return id
		}
	}
	if parts := strings.Split(strings.TrimSpace(r.Header.Get("Traceparent")), "-"); len(parts) >= 4 && isLowerHex(parts[1], 32) {
		return parts[1]
	}
	if id := r.Header.Get("X-Request-Id"); id != "" {
		return id
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// isLowerHex reports whether s is n lowercase hex characters.
func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// pick returns zh when chinese is set, en otherwise.
func pick(chinese bool, en, zh string) string {
	if chinese {
		return zh
	}
	return en
}

// quote returns s in double quotes, shortened to 40 bytes.
func quote(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	b, _ := json.Marshal(s)
	return string(b)
}
