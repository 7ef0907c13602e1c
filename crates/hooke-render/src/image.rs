//! PNG and animated PNG (APNG) files, written to a temporary file beside the target and
//! renamed into place, so that an interrupted write leaves no half-written picture.

use crate::RenderError;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use tempfile::NamedTempFile;

fn write_error(path: &Path, e: impl std::fmt::Display) -> RenderError {
    RenderError::Write { path: path.to_path_buf(), message: e.to_string() }
}

/// A hidden temporary file beside `path`, readable by all once renamed (as a file written in
/// place would be; a temporary file is otherwise private).
fn temporary(path: &Path) -> Result<NamedTempFile, RenderError> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut builder = tempfile::Builder::new();
    builder.prefix(".hooke-render-");
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644));
    builder.tempfile_in(dir).map_err(|e| write_error(path, e))
}

fn check_size(path: &Path, width: u32, height: u32, rgba: &[u8]) -> Result<(), RenderError> {
    if rgba.len() as u64 != 4 * width as u64 * height as u64 {
        return Err(write_error(path, format!("{} bytes for a {width} × {height} RGBA image", rgba.len())));
    }
    Ok(())
}

/// Writes a `width × height` RGBA image (4 bytes per pixel, rows from the top, sRGB) as PNG.
///
/// # Errors
/// [`RenderError::Write`] if the size does not match or the file cannot be written.
pub fn write_png(path: &Path, width: u32, height: u32, rgba: &[u8]) -> Result<(), RenderError> {
    check_size(path, width, height, rgba)?;
    let file = temporary(path)?;
    {
        let mut encoder = png::Encoder::new(BufWriter::new(file.as_file()), width, height);
        encoder.set_color(png::ColorType::Rgba);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(|e| write_error(path, e))?;
        writer.write_image_data(rgba).map_err(|e| write_error(path, e))?;
        writer.finish().map_err(|e| write_error(path, e))?;
    }
    file.persist(path).map_err(|e| write_error(path, e.error))?;
    Ok(())
}

/// An animated PNG written frame by frame: [`AnimationWriter::add`] each of the announced
/// frames, then [`AnimationWriter::finish`] puts the file in place.
pub struct AnimationWriter {
    path: PathBuf,
    size: (u32, u32),
    frames: u32,
    written: u32,
    writer: Option<png::Writer<BufWriter<std::fs::File>>>,
    file: NamedTempFile,
}

impl AnimationWriter {
    /// Starts an animation of `frames` frames of `width × height`, each shown for
    /// `delay` = (numerator, denominator) seconds, looping forever.
    ///
    /// # Errors
    /// [`RenderError::Write`] if the file cannot be made or `frames` is 0.
    pub fn new(path: &Path, width: u32, height: u32, frames: u32, delay: (u16, u16)) -> Result<Self, RenderError> {
        if frames == 0 {
            return Err(write_error(path, "an animation needs at least one frame"));
        }
        let file = temporary(path)?;
        let handle = file.reopen().map_err(|e| write_error(path, e))?;
        let mut encoder = png::Encoder::new(BufWriter::new(handle), width, height);
        encoder.set_color(png::ColorType::Rgba);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_animated(frames, 0).map_err(|e| write_error(path, e))?;
        encoder.set_frame_delay(delay.0, delay.1).map_err(|e| write_error(path, e))?;
        let writer = encoder.write_header().map_err(|e| write_error(path, e))?;
        Ok(AnimationWriter {
            path: path.to_path_buf(),
            size: (width, height),
            frames,
            written: 0,
            writer: Some(writer),
            file,
        })
    }

    /// Appends the next frame (RGBA, as for [`write_png`]).
    ///
    /// # Errors
    /// [`RenderError::Write`] if the size does not match, all frames were written, or the
    /// file cannot be written.
    pub fn add(&mut self, rgba: &[u8]) -> Result<(), RenderError> {
        check_size(&self.path, self.size.0, self.size.1, rgba)?;
        if self.written == self.frames {
            return Err(write_error(&self.path, format!("all {} frames were already written", self.frames)));
        }
        let writer = self.writer.as_mut().ok_or_else(|| write_error(&self.path, "already finished"))?;
        writer.write_image_data(rgba).map_err(|e| write_error(&self.path, e))?;
        self.written += 1;
        Ok(())
    }

    /// Completes the file and moves it into place.
    ///
    /// # Errors
    /// [`RenderError::Write`] if fewer frames than announced were added or the file cannot
    /// be completed.
    pub fn finish(mut self) -> Result<(), RenderError> {
        if self.written != self.frames {
            return Err(write_error(&self.path, format!("{} of {} frames written", self.written, self.frames)));
        }
        if let Some(writer) = self.writer.take() {
            writer.finish().map_err(|e| write_error(&self.path, e))?;
        }
        self.file.persist(&self.path).map_err(|e| write_error(&self.path, e.error))?;
        Ok(())
    }
}
