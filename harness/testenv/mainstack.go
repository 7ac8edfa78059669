package testenv

import (
	"fmt"
	"os"
	"testing"
)

// MainWithStack starts one stack before the tests of a package run, hands
// it to use (which typically stores its URLs in package variables), runs
// the tests with Main and stops the stack at the end. It is for Example
// functions, which have no *testing.T to start a stack with. When the stack
// cannot start, the package fails without running its tests.
func MainWithStack(m *testing.M, opts StackOptions, use func(*Stack)) {
	tb := &mainTB{}
	s, err := tb.startStack(opts)
	if err != nil {
		tb.runCleanups()
		fmt.Fprintf(os.Stderr, "testenv: start stack: %v\n", err)
		os.Exit(1)
	}
	// Registered after the shared servers the stack started, so it runs
	// before they are stopped.
	registerShared(tb.runCleanups)
	use(s)
	Main(m)
}

// StartStandalone starts one stack outside of any test (for a benchmark
// command) and returns it with the function that stops it and every shared
// server it started. When the stack cannot start, what was started is
// stopped and the error returned.
func StartStandalone(opts StackOptions) (*Stack, func(), error) {
	tb := &mainTB{}
	stopAll := func() {
		tb.runCleanups()
		stopShared()
	}
	s, err := tb.startStack(opts)
	if err != nil {
		stopAll()
		return nil, nil, fmt.Errorf("testenv: start stack: %w", err)
	}
	return s, stopAll, nil
}

// mainTB is the testing.TB StartStack gets outside of a test: Fatal
// aborts StartStack (startStack recovers it), Cleanup functions run at the
// end of the package, TempDir is a temporary folder removed with them.
// Methods StartStack does not use are those of the nil embedded TB and
// must not be called.
type mainTB struct {
	testing.TB
	cleanups []func()
}

// mainFatal carries a Fatal out of StartStack.
type mainFatal struct{ msg string }

func (tb *mainTB) startStack(opts StackOptions) (s *Stack, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(mainFatal)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("%s", f.msg)
		}
	}()
	return StartStack(tb, opts), nil
}

func (tb *mainTB) runCleanups() {
	for i := len(tb.cleanups) - 1; i >= 0; i-- {
		tb.cleanups[i]()
	}
	tb.cleanups = nil
}

func (tb *mainTB) Helper()           {}
func (tb *mainTB) Name() string      { return "TestMain" }
func (tb *mainTB) Failed() bool      { return false }
func (tb *mainTB) Cleanup(f func())  { tb.cleanups = append(tb.cleanups, f) }
func (tb *mainTB) Log(args ...any)   { fmt.Fprintln(os.Stderr, args...) }
func (tb *mainTB) Fatal(args ...any) { panic(mainFatal{fmt.Sprint(args...)}) }
func (tb *mainTB) Logf(f string, a ...any) {
	fmt.Fprintf(os.Stderr, f+"\n", a...)
}
func (tb *mainTB) Fatalf(f string, a ...any) { panic(mainFatal{fmt.Sprintf(f, a...)}) }
func (tb *mainTB) TempDir() string {
	dir, err := os.MkdirTemp("", "oncegate-main-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
