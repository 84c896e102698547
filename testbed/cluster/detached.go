package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// stateFile is written into Options.Dir by a Detached cluster.
const stateFile = "cluster.json"

// State describes a detached cluster (Dir/cluster.json).
type State struct {
	Version string      `json:"version"`
	Nodes   []StateNode `json:"nodes"`
}

// StateNode is one node of a detached cluster.
type StateNode struct {
	Name      string `json:"name"`
	PID       int    `json:"pid"`
	HTTP      string `json:"http"`
	Transport string `json:"transport"`
	Home      string `json:"home"`
	Log       string `json:"log"`
}

func (c *Cluster) writeState() error {
	st := State{Version: c.version}
	for i, nd := range c.nodes {
		st.Nodes = append(st.Nodes, StateNode{
			Name: nd.name, PID: c.PID(i), HTTP: c.Addr(i), Transport: c.TransportAddr(i),
			Home: nd.home, Log: nd.logPath,
		})
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(c.dir, stateFile), append(b, '\n'), 0o644)
}

// ReadState reads the state of a detached cluster from dir.
func ReadState(dir string) (State, error) {
	var st State
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return st, fmt.Errorf("cluster: no detached cluster in %s: %w", dir, err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("cluster: %s: %w", filepath.Join(dir, stateFile), err)
	}
	return st, nil
}

// StopDir stops the detached cluster recorded in dir (SIGTERM to each node's
// process group, SIGKILL after grace) and removes dir. Only processes that
// are still this cluster's launcher (checked through /proc) are signalled.
func StopDir(dir string, grace time.Duration) error {
	st, err := ReadState(dir)
	if err != nil {
		return err
	}
	var pids []int
	for _, n := range st.Nodes {
		if isOurNode(n) {
			pids = append(pids, n.PID)
			_ = syscall.Kill(-n.PID, syscall.SIGTERM)
		}
	}
	deadline := time.Now().Add(grace)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if alive(pid) {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
	for _, pid := range pids {
		for i := 0; i < 100 && alive(pid); i++ {
			time.Sleep(100 * time.Millisecond)
		}
		if alive(pid) {
			return fmt.Errorf("cluster: pid %d did not exit", pid)
		}
	}
	return os.RemoveAll(dir)
}

func isOurNode(n StateNode) bool {
	if n.PID <= 0 {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(n.PID) + "/cmdline")
	if err != nil {
		return false
	}
	cmd := strings.ReplaceAll(string(b), "\x00", " ")
	return strings.Contains(cmd, launcherMain) && strings.Contains(cmd, "--home="+n.Home+" ")
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// Field 3 (after "(comm)") is the state; Z is a zombie.
	s := string(b)
	if j := strings.LastIndexByte(s, ')'); j >= 0 && j+2 < len(s) {
		return s[j+2] != 'Z'
	}
	return !errors.Is(err, os.ErrNotExist)
}
