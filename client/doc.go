// Package client calls the oncegate gateway from Go: Preview an action, show
// the preview to the user, Confirm it with the fingerprint the preview
// returned, and Wait for the outcome.
//
// Every answer carries a typed Status. Operation states (completed, failed,
// in_progress, needs_manual_review and their replays) come back as an
// Outcome; every refusal comes back as an *Error that matches, with
// errors.Is, the sentinel of its class (ErrInvalidParams, ErrSecurity,
// ErrFingerprintExpired, ...).
//
// The client retries what the gateway calls retryable — a transport failure
// and temporarily_unavailable — with exactly the same request, so a confirm
// is resent with the same fingerprint and the gateway answers it at most
// once; it never previews again by itself. Retries are bounded and wait for
// the retry_after_ms the gateway names; Wait polls the status endpoint as
// often as poll_after_ms allows.
//
// Decimals in answers are JSON strings ("12.5"); Decimal reads them, and
// also a plain JSON number, without going through float64.
//
// Every terminal answer carries Receipt, the gateway's signed receipt of the
// outcome (a compact EdDSA JWS; its claims are receipt.Claims). JWKS fetches
// the gateway's public keys; VerifyReceipt and Answer.VerifyReceipt check a
// receipt offline against them. The client imports nothing of the gateway
// but the receipt format.
package client
