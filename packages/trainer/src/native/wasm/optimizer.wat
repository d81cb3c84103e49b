;; The native engine's optimizer kernels in WebAssembly SIMD (f32x4), over float32 regions of one
;; shard's memory (imported: each shard of the parameter store is a WebAssembly.Memory holding its
;; weights, gradients and AdamW moments). Assembled by scripts/build-optimizer-wasm.mjs into
;; optimizer-wasm.ts; a test checks that the committed bytes are this file's.
;; Region lengths are multiples of 4 values (the store pads them with zeros).
(module
  (import "env" "memory" (memory 1 65536))
  ;; PyTorch's AdamW on n values at byte offsets w, g, m, v: g ← g·clip, m ← β₁m + (1−β₁)g,
  ;; v ← β₂v + (1−β₂)g², w ← w·keep − c1·m / (√(v·c2) + ε), with c1 = lr / (1 − β₁ᵗ),
  ;; c2 = 1 / (1 − β₂ᵗ) and keep = 1 − lr·λ (1 without weight decay)
  (func (export "adamw") (param $w i32) (param $g i32) (param $m i32) (param $v i32) (param $n i32)
        (param $clip f32) (param $b1 f32) (param $b2 f32) (param $c1 f32) (param $c2 f32) (param $eps f32) (param $keep f32)
    (local $i i32) (local $end i32)
    (local $vclip v128) (local $vb1 v128) (local $va1 v128) (local $vb2 v128) (local $va2 v128)
    (local $vc1 v128) (local $vc2 v128) (local $veps v128) (local $vkeep v128)
    (local $gi v128) (local $mi v128) (local $vi v128)
    (local.set $vclip (f32x4.splat (local.get $clip)))
    (local.set $vb1 (f32x4.splat (local.get $b1)))
    (local.set $va1 (f32x4.splat (f32.sub (f32.const 1) (local.get $b1))))
    (local.set $vb2 (f32x4.splat (local.get $b2)))
    (local.set $va2 (f32x4.splat (f32.sub (f32.const 1) (local.get $b2))))
    (local.set $vc1 (f32x4.splat (local.get $c1)))
    (local.set $vc2 (f32x4.splat (local.get $c2)))
    (local.set $veps (f32x4.splat (local.get $eps)))
    (local.set $vkeep (f32x4.splat (local.get $keep)))
    (local.set $end (i32.shl (local.get $n) (i32.const 2)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $end)))
        (local.set $gi (f32x4.mul (v128.load (i32.add (local.get $g) (local.get $i))) (local.get $vclip)))
        (local.set $mi (f32x4.add (f32x4.mul (v128.load (i32.add (local.get $m) (local.get $i))) (local.get $vb1))
                                  (f32x4.mul (local.get $gi) (local.get $va1))))
        (local.set $vi (f32x4.add (f32x4.mul (v128.load (i32.add (local.get $v) (local.get $i))) (local.get $vb2))
                                  (f32x4.mul (f32x4.mul (local.get $gi) (local.get $gi)) (local.get $va2))))
        (v128.store (i32.add (local.get $m) (local.get $i)) (local.get $mi))
        (v128.store (i32.add (local.get $v) (local.get $i)) (local.get $vi))
        (v128.store (i32.add (local.get $w) (local.get $i))
          (f32x4.sub (f32x4.mul (v128.load (i32.add (local.get $w) (local.get $i))) (local.get $vkeep))
                     (f32x4.div (f32x4.mul (local.get $mi) (local.get $vc1))
                                (f32x4.add (f32x4.sqrt (f32x4.mul (local.get $vi) (local.get $vc2))) (local.get $veps)))))
        (local.set $i (i32.add (local.get $i) (i32.const 16)))
        (br $next))))
  ;; Σ g² of n values at byte offset g, accumulated in float64
  (func (export "sumsq") (param $g i32) (param $n i32) (result f64)
    (local $i i32) (local $end i32) (local $x v128) (local $a v128) (local $b v128)
    (local.set $end (i32.shl (local.get $n) (i32.const 2)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $end)))
        (local.set $x (v128.load (i32.add (local.get $g) (local.get $i))))
        (local.set $a (f64x2.add (local.get $a) (f64x2.mul (f64x2.promote_low_f32x4 (local.get $x)) (f64x2.promote_low_f32x4 (local.get $x)))))
        (local.set $x (i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7 (local.get $x) (local.get $x)))
        (local.set $b (f64x2.add (local.get $b) (f64x2.mul (f64x2.promote_low_f32x4 (local.get $x)) (f64x2.promote_low_f32x4 (local.get $x)))))
        (local.set $i (i32.add (local.get $i) (i32.const 16)))
        (br $next)))
    (local.set $a (f64x2.add (local.get $a) (local.get $b)))
    (f64.add (f64x2.extract_lane 0 (local.get $a)) (f64x2.extract_lane 1 (local.get $a))))
)
