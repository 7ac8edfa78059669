// Command oncegate-probe is the health check of containers whose image has no
// shell or curl (the distroless image of deployments/Dockerfile): it GETs
// one URL and exits 0 on a 2xx answer, 1 otherwise, within a timeout.
//
//	oncegate-probe http://127.0.0.1:8080/readyz
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"
)

// timeout bounds the whole check; container health checks have their own.
const timeout = 3 * time.Second

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: oncegate-probe URL")
		os.Exit(2)
	}
	if err := probe(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// probe GETs url and wants a 2xx answer.
func probe(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("probe %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("probe %s: %w", url, err)
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("probe %s: HTTP %d", url, resp.StatusCode)
	}
	return nil
}
