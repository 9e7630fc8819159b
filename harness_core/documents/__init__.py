"""Document tools behind pip extras (xlsx, docx, pptx, pdf, barcode, media); optional libraries are imported lazily."""
