"""Writes the ImageDecoder test images and their reference pixels as PIL
(Debian's python3-pil) decodes them: NAME.EXT, NAME.rgb (h*w*3 bytes,
PIL's convert("RGB")) and NAME.gray (h*w bytes, convert("L")), listed in
manifest.txt as `NAME.EXT H W`. Run: /usr/bin/python3 make_images.py"""
import io, os
import numpy as np
from PIL import Image

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20261127)
h, w = 13, 11  # odd sizes: row padding and chroma subsampling edges
rgb = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
rgb[4:9, 3:8] = rgb[4, 3]  # a flat patch, so lossy codecs have something easy too
alpha = rng.integers(0, 256, size=(h, w, 1), dtype=np.uint8)

cases = [
    ("rgb.png", Image.fromarray(rgb), dict(format="PNG")),
    ("rgba.png", Image.fromarray(np.concatenate([rgb, alpha], 2), "RGBA"), dict(format="PNG")),
    ("palette.png", Image.fromarray(rgb).quantize(16), dict(format="PNG")),
    ("gray.png", Image.fromarray(rgb[:, :, 0]), dict(format="PNG")),
    ("interlaced.png", Image.fromarray(rgb), dict(format="PNG", interlace=1)),
    ("rgb.jpg", Image.fromarray(rgb), dict(format="JPEG", quality=90)),
    ("gray.jpg", Image.fromarray(rgb[:, :, 1]), dict(format="JPEG", quality=90)),
    ("progressive.jpg", Image.fromarray(rgb), dict(format="JPEG", progressive=True, subsampling=2)),
    ("lossless.webp", Image.fromarray(rgb), dict(format="WEBP", lossless=True)),
    ("lossy.webp", Image.fromarray(rgb), dict(format="WEBP", quality=80)),
    ("rgb.tiff", Image.fromarray(rgb), dict(format="TIFF")),
    ("lzw.tiff", Image.fromarray(rgb), dict(format="TIFF", compression="tiff_lzw")),
    ("gray.tiff", Image.fromarray(rgb[:, :, 2]), dict(format="TIFF")),
    ("rgb.jp2", Image.fromarray(rgb), dict(format="JPEG2000")),
    ("rgb.j2k", Image.fromarray(rgb), dict(format="JPEG2000", no_jp2=True)),
    ("rgb.bmp", Image.fromarray(rgb), dict(format="BMP")),
    ("rgb.ppm", Image.fromarray(rgb), dict(format="PPM")),
]
with open(os.path.join(here, "manifest.txt"), "w") as man:
    for name, img, kw in cases:
        buf = io.BytesIO()
        img.save(buf, **kw)
        data = buf.getvalue()
        with open(os.path.join(here, name), "wb") as f:
            f.write(data)
        dec = Image.open(io.BytesIO(data))
        out_rgb = np.asarray(dec.convert("RGB"))
        out_l = np.asarray(Image.open(io.BytesIO(data)).convert("L"))
        stem = name.replace(".", "_")
        out_rgb.tofile(os.path.join(here, stem + ".rgb"))
        out_l.tofile(os.path.join(here, stem + ".gray"))
        man.write(f"{name} {out_rgb.shape[0]} {out_rgb.shape[1]}\n")
