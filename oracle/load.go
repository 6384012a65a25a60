package main

// Reading a scenario: the cluster dump, the pending pods and the optional
// KubeSchedulerConfiguration, from the same files `policylang eval` reads (YAML or JSON, one
// object, several documents, `kind: List`, directories), into typed objects with the API
// server's defaults applied, as kube-scheduler would receive them from its informers.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	// The API server's defaulting functions for the kinds the scheduler reads.
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	_ "k8s.io/kubernetes/pkg/apis/resource/install"
	_ "k8s.io/kubernetes/pkg/apis/scheduling/install"
	_ "k8s.io/kubernetes/pkg/apis/storage/install"
)

// readPaths returns the raw JSON documents in files and directories, in the order given
// (a directory's files in name order), with `kind: List` expanded.
func readPaths(paths []string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for _, p := range paths {
		files, err := filesUnder(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			docs, err := splitDocuments(data)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			out = append(out, docs...)
		}
	}
	return out, nil
}

func filesUnder(p string) ([]string, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{p}, nil
	}
	var files []string
	err = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		ext := strings.ToLower(filepath.Ext(path))
		if !d.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
			files = append(files, path)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// splitDocuments: YAML or JSON text → one JSON document per object (Lists expanded).
func splitDocuments(data []byte) ([]json.RawMessage, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []json.RawMessage
	for {
		var doc json.RawMessage
		if err := dec.Decode(&doc); err != nil {
			if err == io.EOF {
				return out, nil
			}
			return nil, err
		}
		trimmed := bytes.TrimSpace(doc)
		if len(trimmed) == 0 || string(trimmed) == "null" {
			continue
		}
		out = append(out, expandList(doc)...)
	}
}

func expandList(doc json.RawMessage) []json.RawMessage {
	var head struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	if json.Unmarshal(doc, &head) == nil && strings.HasSuffix(head.Kind, "List") && head.Kind != "" {
		var out []json.RawMessage
		for _, item := range head.Items {
			out = append(out, expandList(item)...)
		}
		return out
	}
	return []json.RawMessage{doc}
}

// decodeObjects types each document with client-go's scheme and applies the API server's
// defaults. An object without a uid gets one from its namespace and name: the scheduler's
// cache, the nominator and preemption tell pods apart by uid; one without a resourceVersion
// gets 1.
func decodeObjects(docs []json.RawMessage) ([]runtime.Object, error) {
	decoder := clientscheme.Codecs.UniversalDeserializer()
	var out []runtime.Object
	for _, doc := range docs {
		obj, gvk, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			var head struct {
				Kind string `json:"kind"`
			}
			_ = json.Unmarshal(doc, &head)
			if head.Kind != "" && runtime.IsNotRegisteredError(err) {
				continue // a kind the scheduler never reads
			}
			return nil, fmt.Errorf("decoding %s: %w", head.Kind, err)
		}
		legacyscheme.Scheme.Default(obj)
		obj.GetObjectKind().SetGroupVersionKind(*gvk)
		if m, err := meta.Accessor(obj); err == nil {
			if m.GetUID() == "" {
				m.SetUID(types.UID(m.GetNamespace() + "/" + m.GetName()))
			}
			// Every stored object has one, and the scheduler's assume cache (ResourceClaims)
			// refuses an object whose version does not parse as a number.
			if m.GetResourceVersion() == "" {
				m.SetResourceVersion("1")
			}
		}
		out = append(out, obj)
	}
	return out, nil
}
