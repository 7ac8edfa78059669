package benche2e

import (
	"fmt"
	"strconv"
)

// RunSubprocess runs the process a benchmark binary was started as by the
// benchmark itself, when args (os.Args) name one: the bare workflow's
// worker (BareWorkerFlag task-queue pollers) or the HTTP floors
// (FloorsFlag config-file). It reports whether args named one, and its
// error. Every binary that calls Run calls it first in main.
func RunSubprocess(args []string) (bool, error) {
	switch {
	case len(args) == 4 && args[1] == BareWorkerFlag:
		pollers, err := strconv.Atoi(args[3])
		if err != nil {
			return true, fmt.Errorf("bare worker: pollers %q: %w", args[3], err)
		}
		if err := RunBareWorker(args[2], pollers); err != nil {
			return true, fmt.Errorf("bare worker: %w", err)
		}
		return true, nil
	case len(args) == 3 && args[1] == FloorsFlag:
		if err := RunFloors(args[2]); err != nil {
			return true, fmt.Errorf("floors: %w", err)
		}
		return true, nil
	}
	return false, nil
}
