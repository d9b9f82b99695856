package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// buildVersion is what version prints: the module version and the VCS
// state the Go toolchain stamped into the binary.
type buildVersion struct {
	Version   string `json:"version"` // "(devel)" when not built from a tagged module
	Revision  string `json:"revision,omitempty"`
	Modified  bool   `json:"modified,omitempty"` // built from a tree with uncommitted changes
	GoVersion string `json:"go_version"`
}

func readBuildVersion() buildVersion {
	v := buildVersion{Version: "(devel)", GoVersion: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if info.Main.Version != "" {
		v.Version = info.Main.Version
	}
	if info.GoVersion != "" {
		v.GoVersion = info.GoVersion
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func (v buildVersion) String() string {
	s := "docket " + v.Version
	if v.Revision != "" {
		s += " revision " + v.Revision
		if v.Modified {
			s += " (modified)"
		}
	}
	return s + " " + v.GoVersion
}

func versionCommand() *command {
	return &command{
		name:    "version",
		summary: "print the module version, VCS revision and Go version of this binary",
		flags: func(fs *flag.FlagSet) action {
			asJSON := fs.Bool("json", false, "print JSON")
			return func(_ context.Context, pos []string, out, _ io.Writer) error {
				if err := wantArgs(pos, 0, ""); err != nil {
					return err
				}
				v := readBuildVersion()
				if *asJSON {
					return writeJSON(out, v, true)
				}
				_, err := fmt.Fprintln(out, v)
				return err
			}
		},
	}
}
