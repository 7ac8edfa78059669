package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/go-jose/go-jose/v4"

	"github.com/oncegate/oncegate/client"
	"github.com/oncegate/oncegate/receipt"
)

// receiptCmd runs `receipt verify <jws> [--jwks URL|FILE] [--json]`:
// it verifies a receipt offline against a JWK set (by default the
// gateway's, GATEWAY_URL + /.well-known/jwks.json) and prints its claims;
// a receipt that does not verify is an error.
func (c *cli) receiptCmd(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "verify" {
		return fmt.Errorf("%w: receipt takes the subcommand verify", errUsage)
	}
	fs := newFlagSet("receipt verify")
	jwks := fs.String("jwks", c.base+receipt.JWKSPath, "the JWK set: a URL, or a file holding a saved copy")
	asJSON := fs.Bool("json", false, "print the claims as JSON")
	pos, err := parse(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: receipt verify takes one receipt (the receipt member of an answer)", errUsage)
	}
	keys, err := c.loadJWKS(ctx, *jwks)
	if err != nil {
		return err
	}
	claims, err := client.VerifyReceipt(strings.TrimSpace(pos[0]), keys)
	if err != nil {
		return err
	}
	if *asJSON {
		out, err := json.MarshalIndent(claims, "", "  ")
		if err != nil {
			return fmt.Errorf("receipt verify: %w", err)
		}
		_, err = fmt.Fprintf(c.stdout, "%s\n", out)
		return err
	}
	return printClaims(c, claims)
}

// loadJWKS reads the JWK set at where: an http(s) URL, else a file.
func (c *cli) loadJWKS(ctx context.Context, where string) (jose.JSONWebKeySet, error) {
	if strings.HasPrefix(where, "http://") || strings.HasPrefix(where, "https://") {
		return client.FetchJWKS(ctx, c.http, where)
	}
	data, err := os.ReadFile(where)
	if err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("read jwks: %w", err)
	}
	return client.ParseJWKS(data)
}

// printClaims writes a verified receipt's claims, one per line.
func printClaims(c *cli, claims receipt.Claims) error {
	none := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	_, err := fmt.Fprintf(c.stdout, "receipt verified\n"+
		"operation_id     %s\nsubject          %s\nscope            %s\nparam_hash       %s\noutcome          %s\n"+
		"result_ref       %s\nfailure_kind     %s\napproval_sha256  %s\nfinalized_at     %s\n",
		claims.OperationID, claims.Subject, claims.Scope, claims.ParamHash, claims.Outcome,
		none(claims.ResultRef), none(claims.FailureKind), none(claims.ApprovalSHA256), claims.FinalizedAt.Format("2006-01-02T15:04:05.000Z07:00"))
	return err
}
