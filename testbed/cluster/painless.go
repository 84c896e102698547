package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// painlessPluginClass is the lang-painless module's plugin class for a
// server version (3.x renamed it): scripts (in queries, aggregations such
// as bucket_script and scripted_metric, and updates), which a distribution
// of OpenSearch has and the bare server does not.
func painlessPluginClass(version string) string {
	if isMajor3OrLater(version) {
		return "org.opensearch.painless.PainlessModulePlugin"
	}
	return "org.opensearch.painless.PainlessPlugin"
}

// painlessLayout names the cache layout of the module's directory.
const painlessLayout = "2"

// painlessDir fetches (once; cached) the lang-painless module of a server
// version and the jars it needs that the launcher does not have already
// (lib, the launcher's jar directory): its scripting SPI, ANTLR and ASM.
func painlessDir(ctx context.Context, version, lib string, logf func(string, ...any)) (string, error) {
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	final := filepath.Join(cache, "painless-"+version+"-"+painlessLayout)
	done := filepath.Join(final, "ok")
	if _, err := os.Stat(done); err == nil {
		return final, nil
	}
	lock, err := lockFile(ctx, filepath.Join(cache, "build.lock"), Holder{What: "lang-painless " + version}, nil)
	if err != nil {
		return "", fmt.Errorf("cluster: launcher build lock: %w", err)
	}
	defer lock.Close()
	if _, err := os.Stat(done); err == nil {
		return final, nil
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return "", errors.New("cluster: mvn not found on PATH: the lang-painless module is fetched with Maven (apt-get install maven)")
	}
	if logf != nil {
		logf("cluster: fetching lang-painless %s into %s", version, final)
	}
	tmp := final + ".tmp"
	os.RemoveAll(tmp)
	os.RemoveAll(final)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", err
	}
	pom := fmt.Sprintf(`<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>org.opensearchrouted</groupId>
  <artifactId>painless-fetch</artifactId>
  <version>1</version>
  <dependencies>
    <dependency>
      <groupId>org.opensearch.plugin</groupId>
      <artifactId>lang-painless</artifactId>
      <version>%s</version>
    </dependency>
  </dependencies>
</project>
`, version)
	if err := os.WriteFile(filepath.Join(tmp, "pom.xml"), []byte(pom), 0o644); err != nil {
		return "", err
	}
	jars := filepath.Join(tmp, "jars")
	cmd := exec.CommandContext(ctx, mvn, "-B", "-q", "-f", filepath.Join(tmp, "pom.xml"),
		"org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies",
		"-DincludeScope=runtime", "-DoutputDirectory="+jars)
	cmd.Dir = tmp
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("cluster: fetching lang-painless %s with Maven failed: %w\n%s", version, err, tail(out.String(), 3000))
	}
	// The launcher has its own copies of some (the server's, log4j, maybe
	// in another version): two copies of a class would be loaded from
	// whichever comes first.
	have := map[string]bool{}
	libJars, err := os.ReadDir(lib)
	if err != nil {
		return "", err
	}
	for _, e := range libJars {
		have[artifactOf(e.Name())] = true
	}
	ents, err := os.ReadDir(jars)
	if err != nil {
		return "", err
	}
	for _, e := range ents {
		if have[artifactOf(e.Name())] {
			if err := os.Remove(filepath.Join(jars, e.Name())); err != nil {
				return "", err
			}
		}
	}
	if err := os.Rename(jars, final); err != nil {
		return "", err
	}
	os.RemoveAll(tmp)
	return final, os.WriteFile(done, []byte("ok\n"), 0o644)
}

// artifactOf is a Maven jar's name without its version: "asm-util" for
// "asm-util-9.7.jar".
func artifactOf(jar string) string {
	name := strings.TrimSuffix(jar, ".jar")
	for i := len(name) - 1; i > 0; i-- {
		if name[i] == '-' && i+1 < len(name) && name[i+1] >= '0' && name[i+1] <= '9' {
			return name[:i]
		}
	}
	return name
}
