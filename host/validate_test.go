package host

import (
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/registry"
)

func TestValidateArgs(t *testing.T) {
	m, _ := registry.Default().Service("github")
	tests := []struct {
		name, op, args string
		max            int
		code           api.Code
		arg, msg       string
	}{
		{name: "valid", op: "list_repos", args: `{"per_page":100}`},
		{name: "empty args are {}", op: "get_viewer", args: ``},
		{name: "unknown op", op: "nope", args: `{}`, code: api.CodeUnknownOp, msg: `service github has no op "nope" (ops: `},
		{name: "over the size limit", op: "list_repos", args: `{"per_page":100}`, max: 10, code: api.CodeBadArgs, msg: "args are larger than 10 bytes"},
		{name: "undeclared", op: "list_repos", args: `{"x":1}`, code: api.CodeBadArgs, arg: "x", msg: `op github.list_repos has no arg "x" (args: page, per_page, sort, visibility)`},
		{name: "undeclared, twice", op: "list_repos", args: `{"x":1,"x":2}`, code: api.CodeBadArgs, arg: "x", msg: `has no arg "x"`},
		{name: "max", op: "list_repos", args: `{"per_page":101}`, code: api.CodeBadArgs, arg: "per_page", msg: `arg "per_page" must be at most 100`},
		{name: "missing", op: "create_issue", args: `{"owner":"o","repo":"r"}`, code: api.CodeBadArgs, arg: "title", msg: `arg "title" is required`},
		{name: "syntax", op: "list_repos", args: `{"per_page":`, code: api.CodeBadArgs, msg: "args must be a JSON object with unique keys"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := asError(t, ValidateArgs(m, tt.op, []byte(tt.args), tt.max))
			if tt.code == "" {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			if err == nil || err.Code != tt.code || err.Arg != tt.arg || !strings.HasPrefix(err.Message, tt.msg) && !strings.Contains(err.Message, tt.msg) {
				t.Fatalf("got %+v, want code %s arg %q message %q", err, tt.code, tt.arg, tt.msg)
			}
		})
	}
}
