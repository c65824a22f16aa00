package cli

import (
	"fmt"
	"path/filepath"

	"github.com/privacycut/privacycut/pipeline"
	"github.com/privacycut/privacycut/receipts"
)

// pluginArg is the hidden first argument with which cut re-executes itself
// as the verifier plugin.
const pluginArg = pipeline.PluginArg

// evidenceKeyPath is --evidence-key, else $PRIVACYCUT_EVIDENCE_KEY, else
// $XDG_DATA_HOME/privacycut/evidence.key, else
// ~/.local/share/privacycut/evidence.key (receipts.DefaultEvidenceKeyPath,
// read through the command's environment).
func (c *Cmd) evidenceKeyPath(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if p := c.Getenv("PRIVACYCUT_EVIDENCE_KEY"); p != "" {
		return p, nil
	}
	if x := c.Getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "privacycut", "evidence.key"), nil
	}
	if h := c.Getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "share", "privacycut", "evidence.key"), nil
	}
	return receipts.DefaultEvidenceKeyPath()
}

func (c *Cmd) evidenceKey(flagValue string) (*receipts.EvidenceKey, error) {
	p, err := c.evidenceKeyPath(flagValue)
	if err != nil {
		return nil, err
	}
	k, err := receipts.LoadOrCreateEvidenceKey(p)
	if err != nil {
		return nil, err
	}
	// The key is wiped when Run returns, after the plugin has stopped.
	c.frees = append(c.frees, k.Wipe)
	return k, nil
}

func readFileCapped(path string, max int64) ([]byte, error) {
	data, over, err := readCapped(nil, path, max)
	if err != nil {
		return nil, err
	}
	if over {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, max)
	}
	return data, nil
}
