package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// DefaultLeeway is the clock skew tolerated on exp, nbf and iat.
const DefaultLeeway = 30 * time.Second

// JWTConfig configures a JWT authenticator. At least one key is required.
type JWTConfig struct {
	// HS256Secret, when set, verifies HS256 tokens (and only HS256 tokens).
	HS256Secret []byte
	// PublicKeys verify RS256 (RSA keys) and ES256 (P-256 ECDSA keys) tokens;
	// each key only verifies its own algorithm.
	PublicKeys []crypto.PublicKey
	// Audience, when set, must be one of the token's aud values.
	Audience string
	// Leeway is the tolerated clock skew; zero means DefaultLeeway.
	Leeway time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// JWT authenticates JSON Web Tokens: sub is the subject, the role claim the
// role (RoleAgent when absent), exp is required, nbf and aud are checked. The
// algorithm is pinned by key type, so a public key can never be used as an
// HMAC secret (no algorithm confusion) and "none" is never accepted.
type JWT struct {
	hs     []byte
	rsa    []jwt.VerificationKey
	ec     []jwt.VerificationKey
	parser *jwt.Parser
}

var _ Authenticator = (*JWT)(nil)

// NewJWT builds a JWT authenticator from cfg.
func NewJWT(cfg JWTConfig) (*JWT, error) {
	j := &JWT{hs: cfg.HS256Secret}
	for i, k := range cfg.PublicKeys {
		switch pk := k.(type) {
		case *rsa.PublicKey:
			if pk.N.BitLen() < 2048 {
				return nil, fmt.Errorf("jwt key %d: RSA key of %d bits, want at least 2048", i, pk.N.BitLen())
			}
			j.rsa = append(j.rsa, pk)
		case *ecdsa.PublicKey:
			if pk.Curve != elliptic.P256() {
				return nil, fmt.Errorf("jwt key %d: ECDSA key is not on P-256 (ES256)", i)
			}
			j.ec = append(j.ec, pk)
		default:
			return nil, fmt.Errorf("jwt key %d: unsupported key type %T (want RSA or P-256 ECDSA)", i, k)
		}
	}
	var methods []string
	if len(j.hs) > 0 {
		if len(j.hs) < 32 {
			return nil, fmt.Errorf("jwt HS256 secret: %d bytes, want at least 32", len(j.hs))
		}
		methods = append(methods, jwt.SigningMethodHS256.Alg())
	}
	if len(j.rsa) > 0 {
		methods = append(methods, jwt.SigningMethodRS256.Alg())
	}
	if len(j.ec) > 0 {
		methods = append(methods, jwt.SigningMethodES256.Alg())
	}
	if len(methods) == 0 {
		return nil, errors.New("jwt: no key configured")
	}
	leeway := cfg.Leeway
	if leeway == 0 {
		leeway = DefaultLeeway
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods(methods),
		jwt.WithLeeway(leeway),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
	}
	if cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(cfg.Audience))
	}
	if cfg.Now != nil {
		opts = append(opts, jwt.WithTimeFunc(cfg.Now))
	}
	j.parser = jwt.NewParser(opts...)
	return j, nil
}

// claims are the registered claims plus the role.
type claims struct {
	jwt.RegisteredClaims
	// Role is the caller's role.
	Role string `json:"role,omitempty"`
}

// Authenticate implements Authenticator.
func (j *JWT) Authenticate(_ context.Context, token string) (Identity, error) {
	var c claims
	if _, err := j.parser.ParseWithClaims(token, &c, j.key); err != nil {
		return Identity{}, refuse(reasonOf(err), fmt.Errorf("jwt: %w", err))
	}
	if c.Subject == "" {
		return Identity{}, refuse(ReasonClaims, errors.New("jwt: no sub claim"))
	}
	role := c.Role
	if role == "" {
		role = RoleAgent
	}
	if role != RoleAgent && role != RoleOperator {
		return Identity{}, refuse(ReasonClaims, fmt.Errorf("jwt: unknown role %q", role))
	}
	return Identity{Subject: c.Subject, Role: role}, nil
}

// key returns the verification keys of the token's algorithm only.
func (j *JWT) key(t *jwt.Token) (any, error) {
	switch t.Method.Alg() {
	case jwt.SigningMethodHS256.Alg():
		if len(j.hs) > 0 {
			return j.hs, nil
		}
	case jwt.SigningMethodRS256.Alg():
		if len(j.rsa) > 0 {
			return jwt.VerificationKeySet{Keys: j.rsa}, nil
		}
	case jwt.SigningMethodES256.Alg():
		if len(j.ec) > 0 {
			return jwt.VerificationKeySet{Keys: j.ec}, nil
		}
	}
	return nil, fmt.Errorf("algorithm %q not accepted", t.Method.Alg())
}

// ParsePublicKeysPEM parses every PUBLIC KEY (PKIX), RSA PUBLIC KEY (PKCS#1)
// and CERTIFICATE block of data.
func ParsePublicKeysPEM(data []byte) ([]crypto.PublicKey, error) {
	var keys []crypto.PublicKey
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		switch block.Type {
		case "PUBLIC KEY":
			k, err := x509.ParsePKIXPublicKey(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("parse public key %d: %w", len(keys), err)
			}
			keys = append(keys, k)
		case "RSA PUBLIC KEY":
			k, err := x509.ParsePKCS1PublicKey(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("parse RSA public key %d: %w", len(keys), err)
			}
			keys = append(keys, k)
		case "CERTIFICATE":
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("parse certificate %d: %w", len(keys), err)
			}
			keys = append(keys, cert.PublicKey)
		default:
			return nil, fmt.Errorf("unexpected PEM block %q (want PUBLIC KEY or CERTIFICATE)", block.Type)
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("no PEM public key found")
	}
	return keys, nil
}

// LoadPublicKeysPEM reads a PEM file of public keys.
func LoadPublicKeysPEM(path string) ([]crypto.PublicKey, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load jwt public keys: %w", err)
	}
	keys, err := ParsePublicKeysPEM(raw)
	if err != nil {
		return nil, fmt.Errorf("load jwt public keys %s: %w", path, err)
	}
	return keys, nil
}
