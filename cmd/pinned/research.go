package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/demo/fakemodel"
	"github.com/elevenmessenger/pinned/internal/display"
	"github.com/elevenmessenger/pinned/internal/research"
	"github.com/elevenmessenger/pinned/internal/research/claude"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/secret"
	"github.com/elevenmessenger/pinned/sidecar"
	"github.com/elevenmessenger/pinned/sidecar/api"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

const researchUsage = `Usage: pinned research --service S [--service S2 ...] [flags] "question"

Runs one research session (docs/API.md, "POST /v1/research"): a model
answers the question by reading the named services through their read ops,
each call through the sidecar's enforcement and the sandbox, bounded in
tool calls, turns, result bytes and wall time. It prints each step as it
runs, then the answer.

The command runs a sidecar in-process on loopback with a fresh bot key and
seals one 10-minute read grant per service to it. Each service's token is
read from the environment variable PINNED_TOKEN_<SERVICE> (e.g.
PINNED_TOKEN_GITHUB), never from the command line. The model is the
Anthropic Messages API: the key from --model-key-file or ANTHROPIC_API_KEY.

--fake runs against the local provider fakes and a SCRIPTED model (a
program replaying tool calls, not a language model; its answers say
"[scripted model]"): no token, no key, nothing leaves this machine.

Examples:
  pinned research --fake --service github --service dnsimple "Which of my DNSimple domains point at GitHub Pages?"
  PINNED_TOKEN_GITHUB=ghp_... ANTHROPIC_API_KEY=sk-ant-... pinned research --service github "Which of my repos have Pages?"

Exit status: 0 an answer was printed, 1 the session failed (the error code
and message are printed), 2 bad usage.

Flags:
`

// stringsFlag is a repeatable string flag.
type stringsFlag []string

func (s *stringsFlag) String() string     { return strings.Join(*s, ",") }
func (s *stringsFlag) Set(v string) error { *s = append(*s, v); return nil }

func runResearch(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("research", flag.ContinueOnError)
	var services stringsFlag
	fs.Var(&services, "service", "`id` of a service to read (repeatable), e.g. github")
	useFake := fs.Bool("fake", false, "use the local provider fakes and a scripted model (labelled as such)")
	keyFile := fs.String("model-key-file", "", "`file` holding the Anthropic API key (default: $"+claude.EnvKey+")")
	baseURL := fs.String("model-base-url", "", "the Messages API base `URL` (default the SDK's, https://api.anthropic.com)")
	modelID := fs.String("model", claude.DefaultModel, "model `id`")
	toolCalls := fs.Int("tool-calls", 0, "bound on tool calls (default 12)")
	wall := fs.Duration("wall-time", 0, "bound on the loop's wall time (default 2m; whole seconds)")
	asJSON := fs.Bool("json", false, "print the whole answer object as JSON instead of text")
	// The question is the one positional argument; flags may come after it.
	var question []string
	rest := args
	for {
		if code, ok := parseFlagsAllowArgs(fs, researchUsage, rest, stdout, stderr); !ok {
			return code
		}
		if fs.NArg() == 0 {
			break
		}
		question = append(question, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "pinned research: "+format+"\n", a...)
		return 2
	}
	q := strings.TrimSpace(strings.Join(question, " "))
	switch {
	case q == "":
		return usage("the question is required, e.g. pinned research --fake --service github \"Which of my repos have Pages?\"")
	case len(services) == 0:
		return usage("name at least one --service (see pinned registry list)")
	case *useFake && (*keyFile != "" || *baseURL != ""):
		return usage("--fake uses the scripted model: drop --model-key-file and --model-base-url")
	case *wall%time.Second != 0 || *wall < 0:
		return usage("--wall-time must be whole seconds, e.g. 90s")
	}
	for _, s := range services {
		if _, ok := registry.Default().Service(s); !ok {
			return usage("unknown service %q (services: %s)", s, joinList(registry.Default().IDs()))
		}
	}
	lim := api.Limits{ToolCalls: *toolCalls, WallSeconds: int(*wall / time.Second)}
	if _, err := lim.Resolve(); err != nil {
		return usage("%s", strings.TrimPrefix(err.Error(), "limits."))
	}
	ctx := context.Background()
	hcfg := host.Config{CacheDir: defaultCacheDir()}
	tokens := map[string]string{}
	var model api.Model
	if *useFake {
		fake, err := fakeapi.New()
		if err != nil {
			fmt.Fprintf(stderr, "pinned research: start the provider fake: %s\n", errText(err))
			return 1
		}
		defer fake.Close()
		hcfg.Override = &host.Override{Addr: fake.Addr(), CAPEM: fake.CACertPEM()}
		fm, m, err := scriptedModel(fakemodel.Pages())
		if err != nil {
			fmt.Fprintf(stderr, "pinned research: %s\n", errText(err))
			return 1
		}
		defer fm.Close()
		model = m
		for _, s := range services {
			tokens[s] = fakeapi.Token(s)
		}
		fmt.Fprintln(stdout, "pinned research: SCRIPTED MODEL — a program replaying tool calls against the local provider fakes, not a language model.")
	} else {
		key, err := claude.KeyFromFile(*keyFile)
		if err != nil {
			return usage("%s", strings.TrimPrefix(err.Error(), "claude: "))
		}
		if model, err = claude.New(claude.Config{APIKey: key, BaseURL: *baseURL, Model: *modelID}); err != nil {
			return usage("%s", strings.TrimPrefix(err.Error(), "claude: "))
		}
		for _, s := range services {
			env := "PINNED_TOKEN_" + strings.ToUpper(s)
			if tokens[s] = strings.TrimSpace(os.Getenv(env)); tokens[s] == "" {
				return usage("no token for %s: set %s (or use --fake)", s, env)
			}
		}
	}
	eng, err := host.New(ctx, hcfg)
	if err != nil {
		fmt.Fprintf(stderr, "pinned research: %s\n", errText(err))
		return 1
	}
	defer eng.Close(ctx)
	onStep := func(st api.Step) {
		if !*asJSON {
			printStep(stdout, st, *useFake)
		}
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "question: %s\n", termSafe(q, false))
	}
	ans, e, err := researchSession(ctx, eng, model, q, tokens, lim, onStep)
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "pinned research: %s\n", errText(err))
		return 1
	case e != nil:
		fmt.Fprintf(stderr, "pinned research: %s: %s\n", e.Code, e.Message)
		return 1
	}
	if *asJSON {
		b, _ := json.MarshalIndent(ans, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
		return 0
	}
	fmt.Fprintf(stdout, "answer (%s, %d turns, %d steps, %d result bytes):\n%s\n", ans.Stop, ans.Turns, len(ans.Steps), ans.ResultBytes, termSafe(ans.Answer, true))
	return 0
}

// parseFlagsAllowArgs parses flags like parseFlags but leaves positional
// arguments to the caller.
func parseFlagsAllowArgs(fs *flag.FlagSet, help string, args []string, stdout, stderr io.Writer) (int, bool) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	switch err := fs.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		printHelp(stdout, help, fs)
		return 0, false
	case err != nil:
		return flagError(stderr, fs.Name(), err.Error()), false
	}
	return 0, true
}

// scriptedOnPurpose says, by outcome, why the scripted model's failed
// steps are part of its script (fakemodel.Pages).
var scriptedOnPurpose = map[string]string{
	"access_denied":  "a repository description tells the model to open an issue, and it obeys; research runs read ops only, so the call was refused and nothing was sent",
	"upstream_error": "this Pages domain is not a DNSimple zone, so DNSimple answered 404",
}

// printStep prints one step. Under the scripted model (scripted), a
// failure the script makes on purpose says so.
func printStep(w io.Writer, st api.Step, scripted bool) {
	fmt.Fprintf(w, "  %s\n", stepLine(st))
	if why := scriptedOnPurpose[st.Outcome]; scripted && why != "" {
		fmt.Fprintf(w, "    ^ on purpose: %s\n", why)
	}
}

// stepLine is one step on one line: service.op, outcome, bytes and args.
func stepLine(st api.Step) string {
	name := st.Service + "." + st.Op
	if st.Service == "" {
		// A tool the palette lacks, named by the model: written as people
		// read ops (service.op), as are the others.
		name = strings.Replace(st.Tool, research.ToolSep, ".", 1)
	}
	return termSafe(fmt.Sprintf("%-30s %-16s %7d bytes  args %s", name, st.Outcome, st.Bytes, st.Args), false)
}

// termSafe writes every rune display.Classify does not call Visible (line
// breaks but, with keepLines, "\n"; C0 controls but, with keepLines,
// "\t"; DEL; C1; Unicode format characters: bidi controls, zero-width,
// tag characters) of s as a \u escape, so text a model chose
// — persuaded, maybe, by the data it read — cannot drive the terminal
// (ANSI escapes, OSC 8 links, a cleared screen) or hide in it.
func termSafe(s string, keepLines bool) string {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case display.Classify(r) != display.Visible: // the one rule (internal/display)
			if r > 0xFFFF {
				fmt.Fprintf(&b, "\\U%08x", r)
			} else {
				fmt.Fprintf(&b, "\\u%04x", r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// scriptedModel starts the fake Messages API with script and returns the
// shipped client pointed at it.
func scriptedModel(script fakemodel.Script) (*fakemodel.Server, api.Model, error) {
	fm, err := fakemodel.New("", script)
	if err != nil {
		return nil, nil, err
	}
	m, err := claude.New(claude.Config{APIKey: fakemodel.Key, BaseURL: fm.URL(), Model: fakemodel.ModelID, MaxRetries: -1})
	if err != nil {
		fm.Close()
		return nil, nil, err
	}
	return fm, m, nil
}

// researchSession serves a sidecar on loopback with a fresh bot key and
// model, seals a 10-minute read grant per service, and asks POST
// /v1/research with Accept: text/event-stream, calling onStep per step
// event. It returns the answer, or the sidecar's error answer.
func researchSession(ctx context.Context, eng *host.Engine, model api.Model, question string, tokens map[string]string,
	lim api.Limits, onStep func(api.Step)) (*sidecar.ResearchResponse, *apiErr, error) {
	key, err := grant.GenerateKey(nil)
	if err != nil {
		return nil, nil, err
	}
	srv, err := sidecar.New(sidecar.Config{Engine: eng, Key: key, Model: model})
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	defer func() { cancel(); <-done }()

	req := sidecar.ResearchRequest{Question: question, Limits: &lim}
	services := make([]string, 0, len(tokens))
	for s := range tokens {
		services = append(services, s)
	}
	slices.Sort(services)
	for _, s := range services {
		sealed, err := grant.Seal(&grant.Grant{Service: s, Access: grant.AccessRead, Kind: grant.KindPAT, Secret: secret.Secret(tokens[s]),
			ExpiresAt: time.Now().Add(sidecar.SuggestedResearchGrantTTL)}, key.Public(), nil)
		if err != nil {
			return nil, nil, err
		}
		req.Grants = append(req.Grants, sealed)
	}
	body, _ := json.Marshal(req)
	hreq, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+ln.Addr().String()+"/v1/research", bytes.NewReader(body))
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	tr := &http.Transport{Proxy: nil}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(hreq)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error apiErr }
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if json.Unmarshal(b, &e) != nil || e.Error.Code == "" {
			return nil, nil, fmt.Errorf("the sidecar answered HTTP %d", resp.StatusCode)
		}
		return nil, &e.Error, nil
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 8<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			event = v
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		switch event {
		case "step":
			var st api.Step
			if json.Unmarshal([]byte(data), &st) == nil && onStep != nil {
				onStep(st)
			}
		case "answer":
			var ans sidecar.ResearchResponse
			if err := json.Unmarshal([]byte(data), &ans); err != nil {
				return nil, nil, fmt.Errorf("the answer event is not JSON: %w", err)
			}
			return &ans, nil, nil
		case "error":
			var e struct{ Error apiErr }
			if json.Unmarshal([]byte(data), &e) != nil {
				return nil, nil, errors.New("the error event is not JSON")
			}
			return nil, &e.Error, nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	return nil, nil, errors.New("the sidecar closed the stream without an answer")
}

// apiErr is the error object of a sidecar answer.
type apiErr struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}
