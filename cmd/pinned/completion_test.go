package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCompletion runs the bash completion script against the built
// binary: commands, subcommands, flags read from --help, services and a
// service's ops.
func TestCompletion(t *testing.T) {
	needTools(t, "bash")
	bin := pinnedBinary(t)
	var script bytes.Buffer
	if code := runCompletion([]string{"bash"}, &script, &bytes.Buffer{}); code != 0 {
		t.Fatalf("completion bash: exit %d", code)
	}
	f := filepath.Join(t.TempDir(), "c.bash")
	if err := os.WriteFile(f, script.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		words string // the command line, the last word being completed
		want  string // COMPREPLY joined by spaces
	}{
		{name: "commands", words: "pinned o", want: "op"},
		{name: "a new command is listed", words: "pinned comp", want: "completion"},
		{name: "grant subcommands", words: "pinned grant ", want: "seal open"},
		{name: "registry subcommands", words: "pinned registry s", want: "show sign snapshot"},
		{name: "flags from --help", words: "pinned op --serv", want: "--service"},
		{name: "flags of a subcommand", words: "pinned grant open --ou", want: "--output"},
		{name: "services", words: "pinned op --service gith", want: "github"},
		{name: "services sharing a prefix", words: "pinned op --service gi", want: "github gitlab"},
		{name: "ops of the service", words: "pinned op --service github --op list_", want: "list_issues list_repos"},
		{name: "registry show OP", words: "pinned registry show dnsimple reg", want: "register_domain"},
		{name: "access", words: "pinned grant seal --access w", want: "write"},
		{name: "connect SERVICE", words: "pinned connect st", want: "stripe"},
		{name: "connect SERVICE after a flag", words: "pinned connect --fake gith", want: "github"},
		{name: "connect --cap", words: "pinned connect github --cap ", want: "read write"},
		{name: "mcp --tools", words: "pinned mcp --tools c", want: "compact"},
		{name: "connections remove with nothing connected", words: "pinned connections remove ", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			words := strings.Split(tt.words, " ")
			var quoted []string
			for _, w := range words {
				quoted = append(quoted, "'"+w+"'")
			}
			sh := "source " + f + "\nCOMP_WORDS=(" + strings.Join(quoted, " ") + ")\nCOMP_CWORD=" + strconv.Itoa(len(words)-1) + "\n_pinned\necho \"${COMPREPLY[*]}\"\n"
			cmd := exec.Command("bash", "-c", sh)
			cmd.Env = []string{"PATH=" + filepath.Dir(bin) + ":" + os.Getenv("PATH"), "XDG_CONFIG_HOME=" + t.TempDir()}
			out, err := cmd.CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != tt.want {
				t.Fatalf("completing %q: %q %v; want %q", tt.words, out, err, tt.want)
			}
		})
	}
	var zsh bytes.Buffer
	if runCompletion([]string{"zsh"}, &zsh, &bytes.Buffer{}) != 0 || !strings.HasPrefix(zsh.String(), "autoload -U +X bashcompinit && bashcompinit\n") {
		t.Fatalf("zsh: %.80q", zsh.String())
	}
	var stderr bytes.Buffer
	if code := runCompletion([]string{"fsh"}, &bytes.Buffer{}, &stderr); code != 2 || !strings.Contains(stderr.String(), `pinned completion: unknown shell "fsh" (did you mean "zsh"?): want bash or zsh`) {
		t.Fatalf("exit %d %q", code, &stderr)
	}
}
