package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// completionCmd prints the script that makes a shell ask streamlearner
// itself for completions (kongplete answers when COMP_LINE is set), so
// the completions follow the binary's own commands and flags.
type completionCmd struct {
	Shell string `arg:"" enum:"bash,zsh,fish" help:"bash, zsh or fish."`
}

var completionScripts = map[string]string{
	"bash": "complete -o default -C '{{bin}}' streamlearner\n",
	"zsh":  "autoload -U +X bashcompinit && bashcompinit\ncomplete -o default -C '{{bin}}' streamlearner\n",
	"fish": `function __complete_streamlearner
    set -lx COMP_LINE (commandline -cp)
    test -z (commandline -ct)
    and set COMP_LINE "$COMP_LINE "
    '{{bin}}'
end
complete -f -c streamlearner -a "(__complete_streamlearner)"
`,
}

func (c *completionCmd) Run(out io.Writer) error {
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("completion: path of this binary: %w", err)
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return fmt.Errorf("completion: path of this binary: %w", err)
	}
	_, err = io.WriteString(out, strings.ReplaceAll(completionScripts[c.Shell], "{{bin}}", bin))
	return err
}
