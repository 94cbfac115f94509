//go:build darwin

package darwin

import (
	"context"
	"errors"
	"os"
)

// Run runs argv under profile with sandbox-exec, in dir with env (nil: the
// current environment), wired to this process's stdin, stdout and stderr.
// It returns the command's exit status, 128+N if it died of signal N, 126
// or 127 (with an error, and nothing run) if argv[0] cannot be executed or
// found through env's PATH, and 125 with an error if sandbox-exec could not
// be started. When ctx ends, the command's process group is killed and the
// error wraps ctx.Err(). See run for the process handling.
func Run(ctx context.Context, profile string, argv, env []string, dir string) (exitCode int, err error) {
	if len(argv) == 0 {
		return exitFailed, errors.New("darwin: no command to run")
	}
	if code, err := findCommand(argv[0], env, dir); err != nil {
		return code, err
	}
	name, args := Command(profile, argv)
	return run(ctx, runSpec{
		name: name, args: args, env: env, dir: dir,
		stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr,
	})
}
