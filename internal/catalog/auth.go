package catalog

// Auth is what an action asks of a caller's token beyond its role:
// `auth: {scope: payments:wire}` in the catalog.
type Auth struct {
	// Scope is the OAuth scope an identity provider's token (one that
	// carries scopes: auth.Identity.Scoped) must have been granted to
	// preview, confirm or read this action's operations; empty: none.
	// A token without it is answered insufficient_scope
	// (auth.Identity.HasScope).
	Scope string `yaml:"scope" json:"scope,omitempty"`
}

// buildAuth validates r (nil: no auth section).
func buildAuth(p problems, r *Auth) Auth {
	if r == nil {
		return Auth{}
	}
	if r.Scope == "" {
		p.addf("auth.scope is required when auth is given (the OAuth scope a token needs for this action, such as payments:wire)")
		return Auth{}
	}
	for _, c := range r.Scope {
		// RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			p.addf("auth.scope %q: a scope is printable ASCII without spaces, quotes or backslashes (RFC 6749 §3.3)", r.Scope)
			return Auth{}
		}
	}
	return *r
}
