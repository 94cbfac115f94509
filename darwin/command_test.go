package darwin

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"testing"
)

func TestCommand(t *testing.T) {
	name, args := Command("(version 1)", []string{"-rf", "a b"})
	if name != "/usr/bin/sandbox-exec" {
		t.Errorf("name = %q", name)
	}
	if want := []string{"-p", "(version 1)", "--", "-rf", "a b"}; !slices.Equal(args, want) {
		t.Errorf("args = %q, want %q", args, want)
	}
}

func TestRunUnsupported(t *testing.T) {
	if runtime.GOOS == "darwin" {
		t.Skip("Run is real on macOS")
	}
	code, err := Run(context.Background(), "(version 1)", []string{"true"}, nil, "")
	if code != 125 || !errors.Is(err, ErrUnsupported) {
		t.Errorf("Run = %d, %v", code, err)
	}
}
