// The DRA CEL selector oracle: k8s.io/dynamic-resource-allocation/cel compiling and evaluating
// selectors as kube-scheduler v1.35 does (the stored-expressions environment, the runtime cost
// limit), for tests/test_dra_cel_oracle.py. Reads a JSON list of cases on stdin and writes, per
// case, the compile error or the match / evaluation error and cel-go's actual cost.
//
// Built by that test against oracle/'s go.mod and go.sum (the same pinned modules).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	dracel "k8s.io/dynamic-resource-allocation/cel"
)

type Case struct {
	Expression string            `json:"expression"`
	Driver     string            `json:"driver"`
	Attributes map[string]any    `json:"attributes"`
	Versions   map[string]string `json:"versions"`
	Capacity   map[string]string `json:"capacity"`
}

func main() {
	var cases []Case
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		panic(err)
	}
	out := []map[string]any{}
	compiler := dracel.GetCompiler(dracel.Features{})
	for _, c := range cases {
		r := map[string]any{"expression": c.Expression}
		res := compiler.CompileCELExpression(c.Expression, dracel.Options{})
		if res.Error != nil {
			r["compile_error"] = res.Error.Detail
			out = append(out, r)
			continue
		}
		r["max_cost"] = res.MaxCost
		d := dracel.Device{Driver: c.Driver, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}, Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}}
		for k, v := range c.Attributes {
			switch x := v.(type) {
			case bool:
				d.Attributes[resourceapi.QualifiedName(k)] = resourceapi.DeviceAttribute{BoolValue: &x}
			case float64:
				i := int64(x)
				d.Attributes[resourceapi.QualifiedName(k)] = resourceapi.DeviceAttribute{IntValue: &i}
			case string:
				d.Attributes[resourceapi.QualifiedName(k)] = resourceapi.DeviceAttribute{StringValue: &x}
			}
		}
		for k, v := range c.Versions {
			vv := v
			d.Attributes[resourceapi.QualifiedName(k)] = resourceapi.DeviceAttribute{VersionValue: &vv}
		}
		for k, v := range c.Capacity {
			d.Capacity[resourceapi.QualifiedName(k)] = resourceapi.DeviceCapacity{Value: resource.MustParse(v)}
		}
		m, details, err := res.DeviceMatches(context.Background(), d)
		if details != nil && details.ActualCost() != nil {
			r["actual_cost"] = *details.ActualCost()
		}
		if err != nil {
			r["eval_error"] = err.Error()
		} else {
			r["match"] = m
		}
		out = append(out, r)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}
