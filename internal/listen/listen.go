// Package listen opens the TCP listeners the binaries serve on. A port that
// another process holds is an error that names the port and the variable
// that moves it, so a stranger beside another stack knows what to change.
package listen

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// ErrPortTaken means the address's port is held by another process.
var ErrPortTaken = errors.New("port taken")

// TCP listens on addr (host:port), which the environment variable named
// variable, set to value, gives. When the port is taken the error wraps
// ErrPortTaken and says which port, which variable and how to move it;
// other errors name the variable too.
func TCP(variable, value, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	switch {
	case err == nil:
		return ln, nil
	case errors.Is(err, syscall.EADDRINUSE):
		_, port, _ := net.SplitHostPort(addr)
		return nil, fmt.Errorf("%w: port %s (%s=%s) is already in use by another process: stop that process, or move this one with %s",
			ErrPortTaken, port, variable, value, variable)
	}
	return nil, fmt.Errorf("listen on %s (%s=%s): %w", addr, variable, value, err)
}
