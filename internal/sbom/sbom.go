// Package sbom describes a built canaryd binary as an SPDX 2.3 document
// (JSON). The document names the main module at the release's version, every module Go linked
// into it as the binary records them (debug/buildinfo, what `go version -m`
// prints), and the Go standard library it was built with, each with its
// package URL so that a scanner can match them against advisories.
//
// It reads only the binary's own build information: it must not ask the go
// command or the network, so that the document describes exactly what was
// shipped, and the same binary always gives the same document.
package sbom

import (
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
	"time"
)

// SPDXVersion is the version of the SPDX specification the documents follow.
const SPDXVersion = "SPDX-2.3"

// noAssertion is SPDX's "nothing is claimed here".
const noAssertion = "NOASSERTION"

// Document is an SPDX 2.3 document, with the JSON names of the
// specification's schema; only the fields this package writes.
type Document struct {
	SPDXVersion       string         `json:"spdxVersion"`
	DataLicense       string         `json:"dataLicense"`
	SPDXID            string         `json:"SPDXID"`
	Name              string         `json:"name"`
	DocumentNamespace string         `json:"documentNamespace"`
	CreationInfo      CreationInfo   `json:"creationInfo"`
	Packages          []Package      `json:"packages"`
	Relationships     []Relationship `json:"relationships"`
}

// CreationInfo says who made a document, and when.
type CreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

// Package is one SPDX package: the main module, a dependency or the
// standard library.
type Package struct {
	Name                  string        `json:"name"`
	SPDXID                string        `json:"SPDXID"`
	VersionInfo           string        `json:"versionInfo"`
	PackageFileName       string        `json:"packageFileName,omitempty"`
	DownloadLocation      string        `json:"downloadLocation"`
	FilesAnalyzed         bool          `json:"filesAnalyzed"`
	Checksums             []Checksum    `json:"checksums,omitempty"`
	LicenseConcluded      string        `json:"licenseConcluded"`
	LicenseDeclared       string        `json:"licenseDeclared"`
	CopyrightText         string        `json:"copyrightText"`
	Comment               string        `json:"comment,omitempty"`
	PrimaryPackagePurpose string        `json:"primaryPackagePurpose"`
	ExternalRefs          []ExternalRef `json:"externalRefs,omitempty"`
}

// Checksum is a digest of a package's file.
type Checksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

// ExternalRef is a package's identifier elsewhere; here, its package URL.
type ExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

// Relationship relates two elements of the document.
type Relationship struct {
	SPDXElementID      string `json:"spdxElementId"`
	RelationshipType   string `json:"relationshipType"`
	RelatedSPDXElement string `json:"relatedSpdxElement"`
}

// Binary is what a document describes beyond the binary's build
// information.
type Binary struct {
	// Name names the document and its namespace:
	// canaryd_VERSION_OS_ARCH, the archive's name without its extension.
	Name string
	// FileName is the binary's name inside the archive (canaryd).
	FileName string
	// Version is the release's version, as -X main.version set it; the
	// build information's own is "(devel)" or a pseudo-version.
	Version string
	// Commit is the commit it was built from, as -X main.commit set it;
	// "" when unknown.
	Commit string
	// SHA256 is the hex SHA-256 of the binary.
	SHA256 string
	// Created is when the document was made; the release's commit time
	// keeps it reproducible.
	Created time.Time
	// Tool names what made the document, for creationInfo (Tool: NAME).
	Tool string
}

// SPDX describes the binary whose build information is info.
func SPDX(info *debug.BuildInfo, bin Binary) (*Document, error) {
	switch {
	case info == nil || info.Main.Path == "":
		return nil, fmt.Errorf("sbom: the binary records no main module (built without module support?)")
	case bin.Name == "" || bin.Version == "":
		return nil, fmt.Errorf("sbom: a name and a version are needed")
	case len(bin.SHA256) != 64 || strings.Trim(bin.SHA256, "0123456789abcdef") != "":
		return nil, fmt.Errorf("sbom: SHA256 %q is not a hex SHA-256", bin.SHA256)
	}
	ids := idSet{}
	main := Package{
		Name:                  info.Main.Path,
		SPDXID:                ids.add("SPDXRef-Package-" + info.Main.Path),
		VersionInfo:           bin.Version,
		PackageFileName:       bin.FileName,
		DownloadLocation:      vcsLocation(info.Main.Path, bin.Commit),
		Checksums:             []Checksum{{Algorithm: "SHA256", ChecksumValue: bin.SHA256}},
		LicenseConcluded:      noAssertion,
		LicenseDeclared:       noAssertion,
		CopyrightText:         noAssertion,
		Comment:               buildComment(info),
		PrimaryPackagePurpose: "APPLICATION",
		ExternalRefs:          purl(info.Main.Path, bin.Version),
	}
	doc := &Document{
		SPDXVersion:       SPDXVersion,
		DataLicense:       "CC0-1.0",
		SPDXID:            "SPDXRef-DOCUMENT",
		Name:              bin.Name,
		DocumentNamespace: "https://" + info.Main.Path + "/spdx/" + bin.Name + "-" + bin.SHA256,
		CreationInfo: CreationInfo{
			Created:  bin.Created.UTC().Format(time.RFC3339),
			Creators: []string{"Tool: " + bin.Tool},
		},
		Packages:      []Package{main},
		Relationships: []Relationship{{"SPDXRef-DOCUMENT", "DESCRIBES", main.SPDXID}},
	}
	if bin.Tool == "" {
		doc.CreationInfo.Creators = []string{"Tool: canaryd-sbom"}
	}

	deps := append([]*debug.Module(nil), info.Deps...)
	sort.Slice(deps, func(i, j int) bool { return deps[i].Path < deps[j].Path })
	for _, d := range deps {
		// A replaced module is built from its replacement: that is what
		// the binary holds and what an advisory would name.
		m := d
		comment := ""
		if d.Replace != nil {
			m = d.Replace
			comment = "replaces " + d.Path + "@" + d.Version
		}
		if m.Version == "" || m.Version == "(devel)" {
			// A replacement by a local directory has no version to fetch.
			comment = strings.TrimSpace(comment + "; from a local directory")
		}
		p := Package{
			Name:                  m.Path,
			SPDXID:                ids.add("SPDXRef-Package-" + m.Path),
			VersionInfo:           m.Version,
			DownloadLocation:      proxyLocation(m.Path, m.Version),
			LicenseConcluded:      noAssertion,
			LicenseDeclared:       noAssertion,
			CopyrightText:         noAssertion,
			Comment:               comment,
			PrimaryPackagePurpose: "LIBRARY",
			ExternalRefs:          purl(m.Path, m.Version),
		}
		doc.Packages = append(doc.Packages, p)
		doc.Relationships = append(doc.Relationships, Relationship{main.SPDXID, "DEPENDS_ON", p.SPDXID})
	}

	if goVersion, ok := strings.CutPrefix(info.GoVersion, "go"); ok {
		std := Package{
			Name:                  "stdlib",
			SPDXID:                ids.add("SPDXRef-Package-stdlib"),
			VersionInfo:           info.GoVersion,
			DownloadLocation:      "https://go.dev/dl/",
			LicenseConcluded:      noAssertion,
			LicenseDeclared:       "BSD-3-Clause",
			CopyrightText:         noAssertion,
			Comment:               "the Go standard library and runtime linked into the binary",
			PrimaryPackagePurpose: "LIBRARY",
			// The package URL that vulnerability scanners (osv-scanner,
			// grype) match Go's own advisories on.
			ExternalRefs: []ExternalRef{{"PACKAGE-MANAGER", "purl", "pkg:golang/stdlib@" + goVersion}},
		}
		doc.Packages = append(doc.Packages, std)
		doc.Relationships = append(doc.Relationships, Relationship{main.SPDXID, "DEPENDS_ON", std.SPDXID})
	}
	return doc, nil
}

// buildComment says how the binary was built, from the build settings
// that matter to a reader: the target, cgo, the flags.
func buildComment(info *debug.BuildInfo) string {
	var parts []string
	for _, s := range info.Settings {
		switch s.Key {
		case "GOOS", "GOARCH", "CGO_ENABLED", "-trimpath", "-buildmode", "GOAMD64", "GOARM64":
			parts = append(parts, s.Key+"="+s.Value)
		}
	}
	c := "built with " + info.GoVersion
	if len(parts) > 0 {
		c += " (" + strings.Join(parts, " ") + ")"
	}
	return c
}

// purl is a module's package URL (pkg:golang/PATH@VERSION), or none when
// the module has no version.
func purl(path, version string) []ExternalRef {
	if version == "" || version == "(devel)" {
		return nil
	}
	return []ExternalRef{{"PACKAGE-MANAGER", "purl", "pkg:golang/" + path + "@" + version}}
}

// proxyLocation is where the go command downloads a module from: its zip
// on the public module proxy.
func proxyLocation(path, version string) string {
	if version == "" || version == "(devel)" || strings.HasPrefix(path, ".") || strings.HasPrefix(path, "/") {
		return noAssertion
	}
	return "https://proxy.golang.org/" + escape(path) + "/@v/" + escape(version) + ".zip"
}

// vcsLocation is the main module's repository at a commit, in SPDX's
// VCS form.
func vcsLocation(path, commit string) string {
	loc := "git+https://" + path
	if commit != "" && commit != "unknown" {
		loc += "@" + commit
	}
	return loc
}

// escape is the module proxy's case encoding: an upper-case letter is
// "!" and the letter in lower case (golang.org/x/mod/module.EscapePath).
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// idSet hands out SPDX identifiers: letters, digits, "." and "-" only,
// each unique in its document.
type idSet map[string]bool

func (s idSet) add(raw string) string {
	id := strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '.', r == '-':
			return r
		}
		return '-'
	}, raw)
	unique := id
	for n := 2; s[unique]; n++ {
		unique = fmt.Sprintf("%s-%d", id, n)
	}
	s[unique] = true
	return unique
}
