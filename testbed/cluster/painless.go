package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
const painlessLayout = "3"

// painlessDir fetches (once; cached) the lang-painless module of a server
// version and the jars it needs that the launcher does not have already
// (lib, the launcher's jar directory): its scripting SPI, ANTLR and ASM.
func painlessDir(ctx context.Context, version, lib string, logf func(string, ...any)) (string, error) {
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return "", errors.New("cluster: mvn not found on PATH: the lang-painless module is fetched with Maven (apt-get install maven)")
	}
	return cachedDir(ctx, "painless-"+version+"-"+painlessLayout, "lang-painless "+version, logf, func(tmp string) error {
		scratch := tmp + ".pom"
		os.RemoveAll(scratch)
		defer os.RemoveAll(scratch)
		if err := os.MkdirAll(scratch, 0o755); err != nil {
			return err
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
		if err := os.WriteFile(filepath.Join(scratch, "pom.xml"), []byte(pom), 0o644); err != nil {
			return err
		}
		if out, err := runMaven(ctx, mvn, scratch, "-B", "-q", "-f", filepath.Join(scratch, "pom.xml"),
			"org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies",
			"-DincludeScope=runtime", "-DoutputDirectory="+tmp); err != nil {
			return fmt.Errorf("cluster: fetching lang-painless %s with Maven failed: %w\n%s", version, err, out)
		}
		return dropLauncherJars(tmp, lib)
	})
}

// dropLauncherJars removes from dir the jars of artifacts the launcher has
// its own copy of in lib (the server's, log4j, maybe in another version):
// two copies of a class would be loaded from whichever comes first.
func dropLauncherJars(dir, lib string) error {
	have := map[string]bool{}
	libJars, err := os.ReadDir(lib)
	if err != nil {
		return err
	}
	for _, e := range libJars {
		have[artifactOf(e.Name())] = true
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if have[artifactOf(e.Name())] {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
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
