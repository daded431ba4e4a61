package hubd_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// license is the SPDX identifier of hubd's license, which every package
// manifest in the repository declares.
const license = "Apache-2.0"

// apacheSHA256 is the SHA-256 of the Apache License 2.0 as the Apache
// Software Foundation publishes it (https://www.apache.org/licenses/LICENSE-2.0.txt,
// with its appendix), byte for byte.
const apacheSHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"

// licenseCopies are the LICENSE files that travel in the SDKs' packages
// (a wheel or an npm tarball holds only its own directory): each is the
// root's, byte for byte.
var licenseCopies = []string{"sdk/python/LICENSE", "sdk/typescript/LICENSE"}

// TestLicenseFile checks LICENSE is the Apache License 2.0, unaltered, and
// the SDKs' copies are the same file.
func TestLicenseFile(t *testing.T) {
	root, err := os.ReadFile("LICENSE")
	if err != nil {
		t.Fatalf("the repository has no LICENSE: %v", err)
	}
	if sum := sha256.Sum256(root); hex.EncodeToString(sum[:]) != apacheSHA256 {
		t.Errorf("LICENSE is not the Apache License 2.0 text (sha256 %x, want %s): copy https://www.apache.org/licenses/LICENSE-2.0.txt unchanged", sum, apacheSHA256)
	}
	for _, p := range licenseCopies {
		b, err := os.ReadFile(filepath.FromSlash(p))
		if err != nil {
			t.Errorf("%s: %v (the package built from its directory carries the license: cp LICENSE %s)", p, err, p)
			continue
		}
		if string(b) != string(root) {
			t.Errorf("%s differs from LICENSE: cp LICENSE %s", p, p)
		}
	}
}

// TestManifestLicenses checks that every package manifest in the
// repository (package.json, the root entry of package-lock.json,
// pyproject.toml) declares Apache-2.0, and that no setup.py or setup.cfg
// declares a Python package beside pyproject.toml. go.mod has no license
// field: LICENSE covers the Go modules.
func TestManifestLicenses(t *testing.T) {
	manifests := map[string]func(string) (string, error){
		"package.json":      packageJSONLicense,
		"package-lock.json": packageLockLicense,
		"pyproject.toml":    pyprojectLicense,
	}
	n := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir // installed packages, .git, .venv
			}
			return nil
		}
		if d.Name() == "setup.py" || d.Name() == "setup.cfg" {
			t.Errorf("%s: a Python package is declared in pyproject.toml only (its license with it)", path)
		}
		read := manifests[d.Name()]
		if read == nil {
			return nil
		}
		n++
		got, err := read(path)
		switch {
		case err != nil:
			t.Errorf("%s: %v", path, err)
		case got != license:
			t.Errorf("%s declares the license %q, want %q", path, got, license)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 3 {
		t.Errorf("found %d package manifests, want at least the Python and TypeScript SDKs' (is the test running at the repository root?)", n)
	}
}

// packageJSONLicense returns the "license" of a package.json ("" when it
// has none).
func packageJSONLicense(path string) (string, error) {
	var m struct {
		License any `json:"license"`
	}
	if err := readJSON(path, &m); err != nil {
		return "", err
	}
	s, ok := m.License.(string)
	if !ok && m.License != nil {
		return "", fmt.Errorf("\"license\" is %v, want the SPDX string %q", m.License, license)
	}
	return s, nil
}

// packageLockLicense returns the license package-lock.json records for
// the package itself (npm copies it from package.json).
func packageLockLicense(path string) (string, error) {
	var m struct {
		Packages map[string]struct {
			License string `json:"license"`
		} `json:"packages"`
	}
	if err := readJSON(path, &m); err != nil {
		return "", err
	}
	return m.Packages[""].License, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// pyprojectLicense returns the license of a pyproject.toml's [project]
// table: license = "X" (PEP 639) or license = {text = "X"} (the form of
// setuptools before 77). A "License ::" classifier naming anything but
// the Apache Software License is an error. TOML is read line by line: the
// keys are on lines of their own in the files this repository writes.
func pyprojectLicense(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var (
		inProject bool
		got       string
		isKey     = regexp.MustCompile(`^license\s*=`)
		value     = regexp.MustCompile(`^license\s*=\s*(?:"([^"]*)"|\{\s*text\s*=\s*"([^"]*)"\s*\})\s*(?:#.*)?$`)
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") && !strings.HasPrefix(line, "[[") {
			inProject = line == "[project]"
			continue
		}
		switch {
		case !inProject:
		case isKey.MatchString(line):
			m := value.FindStringSubmatch(line)
			if m == nil {
				return "", fmt.Errorf("[project] %s: want license = %q or license = {text = %q}", line, license, license)
			}
			got = m[1] + m[2]
		case strings.Contains(line, `"License ::`) && !strings.Contains(line, `"License :: OSI Approved :: Apache Software License"`):
			return "", fmt.Errorf("the classifier %s is not the Apache Software License's", line)
		}
	}
	return got, sc.Err()
}
