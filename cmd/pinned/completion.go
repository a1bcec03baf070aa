package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

const completionUsage = `Usage: pinned completion bash|zsh

Prints a shell completion script: command and subcommand names, every
command's flags (read from "pinned CMD --help" as you type, so they always
match the binary), service ids after --service, the service's op names
after --op, and file names after flags that take a file.

  source <(pinned completion bash)          # bash, this shell
  pinned completion bash > /etc/bash_completion.d/pinned
  source <(pinned completion zsh)           # zsh (uses bashcompinit)

Exit status: 0 success, 2 bad usage.
`

// subcommands are the second words of commands that have them, for
// completion. A command with subcommands adds its list here.
var subcommands = map[string][]string{
	"grant":       grantSubcommands,
	"registry":    registrySubcommands,
	"connections": {"remove"},
	"audit":       auditSubcommands,
}

func runCompletion(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && isHelp(args[0]) {
		fmt.Fprint(stdout, completionUsage)
		return 0
	}
	if len(args) != 1 {
		return flagError(stderr, "completion", "want one shell: bash or zsh")
	}
	switch args[0] {
	case "bash":
		fmt.Fprint(stdout, bashCompletion())
	case "zsh":
		fmt.Fprint(stdout, "autoload -U +X bashcompinit && bashcompinit\n"+bashCompletion())
	default:
		if strings.HasPrefix(args[0], "-") {
			return flagError(stderr, "completion", undefinedFlag(args[0]))
		}
		return flagError(stderr, "completion", unknownWord("shell", args[0], []string{"bash", "zsh"})+": want bash or zsh")
	}
	return 0
}

// bashCompletion is the bash script; the command list comes from
// commands(), so a new command completes without touching this.
func bashCompletion() string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	var subs []string
	for c, s := range subcommands {
		subs = append(subs, fmt.Sprintf("    %s) subs=%q ;;", c, strings.Join(s, " ")))
	}
	sort.Strings(subs)
	return strings.NewReplacer("@COMMANDS@", strings.Join(names, " "), "@SUBS@", strings.Join(subs, "\n")).Replace(bashScript)
}

const bashScript = `# pinned shell completion (pinned completion bash)
_pinned() {
  local cur prev bin cmd sub subs i svc
  cur="${COMP_WORDS[COMP_CWORD]}"
  prev="${COMP_WORDS[COMP_CWORD-1]}"
  bin="${COMP_WORDS[0]}"
  COMPREPLY=()
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "@COMMANDS@ help" -- "$cur"))
    return 0
  fi
  cmd="${COMP_WORDS[1]}"
  subs=""
  case "$cmd" in
@SUBS@
  esac
  if [ -n "$subs" ] && [ "$COMP_CWORD" -eq 2 ]; then
    COMPREPLY=($(compgen -W "$subs" -- "$cur"))
    return 0
  fi
  [ -n "$subs" ] && sub="${COMP_WORDS[2]}"
  svc=""
  for ((i = 1; i < COMP_CWORD; i++)); do
    if [ "${COMP_WORDS[i]}" = "--service" ]; then svc="${COMP_WORDS[i+1]}"; fi
  done
  case "$prev" in
    --service|-service)
      COMPREPLY=($(compgen -W "$("$bin" registry list 2>/dev/null | awk 'NR > 1 {print $1}' | sort -u)" -- "$cur"))
      return 0 ;;
    --op|-op)
      COMPREPLY=($(compgen -W "$("$bin" registry list 2>/dev/null | awk -v s="$svc" 'NR > 1 && $1 == s {print $3}')" -- "$cur"))
      return 0 ;;
    --access) COMPREPLY=($(compgen -W "read write" -- "$cur")); return 0 ;;
    --kind) COMPREPLY=($(compgen -W "pat oauth" -- "$cur")); return 0 ;;
    --cap) COMPREPLY=($(compgen -W "read write" -- "$cur")); return 0 ;;
    --tools) COMPREPLY=($(compgen -W "full compact" -- "$cur")); return 0 ;;
    --token-env|--refresh-env) COMPREPLY=($(compgen -v -- "$cur")); return 0 ;;
    --output) COMPREPLY=($(compgen -W "text table json env" -- "$cur")); return 0 ;;
    --cache-dir) COMPREPLY=($(compgen -d -- "$cur")); return 0 ;;
    --key|--key-file|--out|--in|--cacert|--ca-out|--manifest|--token-file|--broker-token-file|--state-key-file|--instance-tokens-file|--provider-ca)
      COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
  esac
  if [ "$cmd" = registry ] && [ "$sub" = show ] && [[ "$cur" != -* ]]; then
    if [ "$COMP_CWORD" -eq 3 ]; then
      COMPREPLY=($(compgen -W "$("$bin" registry list 2>/dev/null | awk 'NR > 1 {print $1}' | sort -u)" -- "$cur"))
    elif [ "$COMP_CWORD" -eq 4 ]; then
      COMPREPLY=($(compgen -W "$("$bin" registry list 2>/dev/null | awk -v s="${COMP_WORDS[3]}" 'NR > 1 && $1 == s {print $3}')" -- "$cur"))
    fi
    return 0
  fi
  if [ "$cmd" = connect ] && [[ "$cur" != -* ]]; then
    COMPREPLY=($(compgen -W "$("$bin" registry list 2>/dev/null | awk 'NR > 1 {print $1}' | sort -u)" -- "$cur"))
    return 0
  fi
  if [ "$cmd" = connections ] && [ "$sub" = remove ] && [[ "$cur" != -* ]]; then
    COMPREPLY=($(compgen -W "$("$bin" connections 2>/dev/null | awk 'NR > 1 && $1 != "no" {print $1}')" -- "$cur"))
    return 0
  fi
  if [ "$cmd" = registry ] && [ "$sub" = check ]; then
    COMPREPLY=($(compgen -f -- "$cur")); return 0
  fi
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$("$bin" $cmd $sub --help 2>/dev/null | sed -n 's/^  -\([a-z][a-z0-9-]*\).*/--\1/p')" -- "$cur"))
  fi
  return 0
}
complete -F _pinned pinned
`
