// Package openapi holds the gateway's OpenAPI 3.0 document (docs/contract.md §4,
// every endpoint and every status body), serves it, and validates real
// responses against it for integration tests.
package openapi

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"net/http"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

//go:embed openapi.json
var document []byte

// Document returns a copy of the OpenAPI document (JSON).
func Document() []byte {
	return bytes.Clone(document)
}

// Handler serves GET /openapi.json.
func Handler() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(document)
		}
	}
}

// Load parses and validates the document.
func Load(ctx context.Context) (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(Document())
	if err != nil {
		return nil, fmt.Errorf("load openapi document: %w", err)
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("validate openapi document: %w", err)
	}
	return doc, nil
}

// Validator checks real responses against the document.
type Validator struct {
	doc    *openapi3.T
	router routers.Router
}

// NewValidator loads the document and builds its router. (A function named
// Validator cannot share its name with the type in Go.)
func NewValidator() (*Validator, error) {
	doc, err := Load(context.Background())
	if err != nil {
		return nil, fmt.Errorf("openapi validator: %w", err)
	}
	// Routes are matched by path alone: the document's servers name the dev
	// stack, while responses come from any gateway (tests use free ports).
	doc.Servers = nil
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi validator: build router: %w", err)
	}
	return &Validator{doc: doc, router: router}, nil
}

// ValidateResponse checks one response: that method and path (with an
// optional query) name a documented operation, that status is documented
// for it, and that header and body match the documented content. A nil
// header stands for Content-Type: application/json.
func (v *Validator) ValidateResponse(method, path string, status int, header http.Header, body []byte) error {
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	req, err := http.NewRequest(method, "http://oncegate.invalid"+path, nil)
	if err != nil {
		return fmt.Errorf("validate response %s %s: %w", method, path, err)
	}
	route, pathParams, err := v.router.FindRoute(req)
	if err != nil {
		return fmt.Errorf("validate response %s %s: find route: %w", method, path, err)
	}
	if header == nil {
		header = http.Header{"Content-Type": {"application/json"}}
	}
	opts := &openapi3filter.Options{
		IncludeResponseStatus: true,
		MultiError:            true,
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request:    req,
			PathParams: pathParams,
			Route:      route,
			Options:    opts,
		},
		Status:  status,
		Header:  header,
		Options: opts,
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("validate response %s %s %d: %w", method, path, status, err)
	}
	return nil
}
