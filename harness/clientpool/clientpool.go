// Package clientpool keeps the public gateway clients of the harness's
// scripted agents (the soak, the agent simulator): one client per bearer
// token, each sending every request once, since a script retries as it
// says and records every answer.
package clientpool

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/oncegate/oncegate/client"
)

// Pool holds the clients of one gateway URL, by token. It is safe for
// concurrent use.
type Pool struct {
	baseURL string
	opts    []client.Option
	mu      sync.Mutex
	agents  map[string]*client.Client
	ops     map[string]*client.Ops
}

// New returns the pool of the gateway at baseURL whose clients send with hc.
func New(baseURL string, hc *http.Client) *Pool {
	return &Pool{baseURL: baseURL, opts: []client.Option{client.WithHTTPClient(hc), client.WithRetry(1, 0)},
		agents: map[string]*client.Client{}, ops: map[string]*client.Ops{}}
}

// Agent returns the agent client of token.
func (p *Pool) Agent(token string) (*client.Client, error) {
	return get(p, p.agents, token, client.New)
}

// Operator returns the ops client of token.
func (p *Pool) Operator(token string) (*client.Ops, error) {
	return get(p, p.ops, token, client.NewOps)
}

// get returns the client of token in m, made by newClient the first time.
func get[C any](p *Pool, m map[string]C, token string, newClient func(string, string, ...client.Option) (C, error)) (C, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := m[token]; ok {
		return c, nil
	}
	c, err := newClient(p.baseURL, token, p.opts...)
	if err != nil {
		var zero C
		return zero, fmt.Errorf("client of a token: %w", err)
	}
	m[token] = c
	return c, nil
}

// Call sends one request as token with send, cut by timeout. It returns
// the client's answer and error as they are, and whether the timeout cut
// the call (lost: its answer, if any came, is lost to the caller).
func (p *Pool) Call(ctx context.Context, token string, timeout time.Duration,
	send func(context.Context, *client.Client) (*client.Answer, error)) (a *client.Answer, lost bool, err error) {
	c, err := p.Agent(token)
	if err != nil {
		return nil, false, err
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	a, err = send(cctx, c)
	return a, errors.Is(cctx.Err(), context.DeadlineExceeded), err
}
